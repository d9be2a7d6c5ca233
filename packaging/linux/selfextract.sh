#!/bin/sh
# FileKiln @VERSION@ for Linux x86_64: a self-extracting runnable (AppImage-style).
#
#   ./FileKiln-@VERSION@-x86_64.run                 start the desktop app
#   ./FileKiln-@VERSION@-x86_64.run serve           any `filekiln` command line works
#   ./FileKiln-@VERSION@-x86_64.run --extract DIR   only unpack the AppDir into DIR
#   ./FileKiln-@VERSION@-x86_64.run --where         print where it is unpacked
#
# The first start unpacks the app once into ~/.cache/filekiln/app-@BUILD_ID@ (or $FILEKILN_RUN_DIR);
# later starts run it from there at once. Your data is never kept there: it lives in the platform's
# user data folder (or --data-dir / FILEKILN_DATA_DIR). Deleting ~/.cache/filekiln is always safe.
set -eu
SKIP=@SKIP@
SELF="$(readlink -f "$0")"
unpack() {  # unpack the payload into $1 (which must not exist yet)
    mkdir -p "$1"
    tail -n +"$SKIP" "$SELF" | tar -xzf - -C "$1" --strip-components=1
}
case "${1:-}" in
    --extract)
        target="${2:-FileKiln.AppDir}"
        [ -e "$target" ] && { echo "$target exists" >&2; exit 1; }
        unpack "$target"
        echo "$target"
        exit 0 ;;
esac
CACHE_ROOT="${XDG_CACHE_HOME:-${HOME:-/tmp}/.cache}/filekiln"
APPDIR="${FILEKILN_RUN_DIR:-$CACHE_ROOT/app-@BUILD_ID@}"
if [ "${1:-}" = "--where" ]; then echo "$APPDIR"; exit 0; fi
if [ ! -x "$APPDIR/AppRun" ]; then
    mkdir -p "$(dirname "$APPDIR")"
    tmp="$(mktemp -d "$APPDIR.partial.XXXXXX")"
    trap 'rm -rf "$tmp"' EXIT INT TERM
    echo "FileKiln: unpacking into $APPDIR (first start only) ..." >&2
    unpack "$tmp/app"
    mv -T "$tmp/app" "$APPDIR" 2>/dev/null || true  # another start may have won the race: use its copy
    rm -rf "$tmp"
    trap - EXIT INT TERM
fi
FILEKILN_RUNNABLE="$SELF" exec "$APPDIR/AppRun" "$@"
exit 1
# the gzip'ed tar of the AppDir follows this line
