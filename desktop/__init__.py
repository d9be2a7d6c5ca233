"""The PySide6 desktop app: widgets and view models over localapi's service layer."""
