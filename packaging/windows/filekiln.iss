; Inno Setup script for FileKiln on Windows (Inno Setup 6).
;
; Build the one-folder app on Windows first (same spec):
;     py -3.11 -m venv .venv && .venv\Scripts\pip install -e ".[gui,docs,ai]" pyinstaller pyinstaller-hooks-contrib
;     .venv\Scripts\python packaging\build.py
; which leaves dist\filekiln\ with FileKiln-gui.exe (windowed, for the Start menu), filekiln.exe (console: serve,
; worker, keys, tools, convert) and _internal\. Then:
;     iscc /DAppVersion=0.1.0 packaging\windows\filekiln.iss
; gives dist\FileKiln-0.1.0-setup.exe. Sign both executables and the setup with signtool before release.
;
; Per-user install by default (no admin prompt): {autopf} becomes %LOCALAPPDATA%\Programs. The app never
; writes into its install folder; data lives in %LOCALAPPDATA%\FileKiln (platformdirs), which the
; uninstaller leaves alone unless the user asks.

#ifndef AppVersion
  #define AppVersion "0.1.0"
#endif
#define AppName "FileKiln"
#define SourceDir "..\..\dist\filekiln"

[Setup]
AppId={{F8BBEDFC-7867-5B6A-9E70-8E810FD7E430}
AppName={#AppName}
AppVersion={#AppVersion}
AppVerName={#AppName} {#AppVersion}
AppPublisher=FileKiln
DefaultDirName={autopf}\{#AppName}
DefaultGroupName={#AppName}
DisableProgramGroupPage=yes
PrivilegesRequired=lowest
PrivilegesRequiredOverridesAllowed=dialog
ArchitecturesAllowed=x64compatible
ArchitecturesInstallIn64BitMode=x64compatible
OutputDir=..\..\dist
OutputBaseFilename=FileKiln-{#AppVersion}-setup
SetupIconFile=..\..\build\icons\filekiln.ico
UninstallDisplayIcon={app}\FileKiln-gui.exe
Compression=lzma2/max
SolidCompression=yes
WizardStyle=modern
ChangesEnvironment=yes
CloseApplications=yes

[Languages]
Name: "english"; MessagesFile: "compiler:Default.isl"

[Tasks]
Name: "desktopicon"; Description: "{cm:CreateDesktopIcon}"; GroupDescription: "{cm:AdditionalIcons}"; Flags: unchecked
Name: "contextmenu"; Description: "Add ""Convert with FileKiln"" to Explorer's menu for files, and FileKiln to Send to"
Name: "addtopath"; Description: "Add the filekiln command to PATH (for scripts: filekiln serve, filekiln convert)"; Flags: unchecked

[Files]
Source: "{#SourceDir}\*"; DestDir: "{app}"; Flags: ignoreversion recursesubdirs createallsubdirs

[Icons]
Name: "{group}\{#AppName}"; Filename: "{app}\FileKiln-gui.exe"
Name: "{group}\{#AppName} API server"; Filename: "{app}\filekiln.exe"; Parameters: "serve"
Name: "{group}\Uninstall {#AppName}"; Filename: "{uninstallexe}"
Name: "{autodesktop}\{#AppName}"; Filename: "{app}\FileKiln-gui.exe"; Tasks: desktopicon
; Send to: Explorer appends the selected files; each launch hands them to the running window (one per data dir)
Name: "{usersendto}\{#AppName}"; Filename: "{app}\FileKiln-gui.exe"; Parameters: "gui"; Tasks: contextmenu

[Registry]
; per-user PATH entry, only with the task; removed again by the uninstaller (see [Code])
Root: HKCU; Subkey: "Environment"; ValueType: expandsz; ValueName: "Path"; ValueData: "{olddata};{app}"; \
    Tasks: addtopath; Check: NeedsAddPath(ExpandConstant('{app}'))

; "Open with" for every file type, and "Convert with FileKiln" on files (one launch per selected file: each
; hands its file to the running window)
Root: HKCU; Subkey: "Software\Classes\Applications\FileKiln-gui.exe\shell\open\command"; ValueType: string; \
    ValueName: ""; ValueData: """{app}\FileKiln-gui.exe"" gui ""%1"""; Flags: uninsdeletekey
Root: HKCU; Subkey: "Software\Classes\*\shell\FileKiln"; ValueType: string; ValueName: ""; \
    ValueData: "Convert with FileKiln"; Flags: uninsdeletekey; Tasks: contextmenu
Root: HKCU; Subkey: "Software\Classes\*\shell\FileKiln"; ValueType: string; ValueName: "Icon"; \
    ValueData: "{app}\FileKiln-gui.exe"; Tasks: contextmenu
Root: HKCU; Subkey: "Software\Classes\*\shell\FileKiln\command"; ValueType: string; ValueName: ""; \
    ValueData: """{app}\FileKiln-gui.exe"" gui ""%1"""; Tasks: contextmenu

[Run]
Filename: "{app}\FileKiln-gui.exe"; Description: "{cm:LaunchProgram,{#AppName}}"; Flags: nowait postinstall skipifsilent

[UninstallDelete]
; nothing: the install folder holds only what the installer put there

[Code]
function NeedsAddPath(Dir: string): Boolean;
var
  Current: string;
begin
  if not RegQueryStringValue(HKCU, 'Environment', 'Path', Current) then
  begin
    Result := True;
    exit;
  end;
  Result := Pos(';' + Uppercase(Dir) + ';', ';' + Uppercase(Current) + ';') = 0;
end;

procedure CurUninstallStepChanged(CurUninstallStep: TUninstallStep);
var
  Current, Dir: string;
  P: Integer;
begin
  if CurUninstallStep = usPostUninstall then
  begin
    Dir := ExpandConstant('{app}');
    if RegQueryStringValue(HKCU, 'Environment', 'Path', Current) then
    begin
      P := Pos(';' + Uppercase(Dir), Uppercase(Current));
      if P > 0 then
      begin
        Delete(Current, P, Length(Dir) + 1);
        RegWriteExpandStringValue(HKCU, 'Environment', 'Path', Current);
      end;
    end;
    if MsgBox('Also delete your FileKiln data (converted files, keys, settings) in ' +
              ExpandConstant('{localappdata}\FileKiln') + '?', mbConfirmation, MB_YESNO or MB_DEFBUTTON2) = IDYES then
      DelTree(ExpandConstant('{localappdata}\FileKiln'), True, True, True);
  end;
end;
