# Shared by deploy/local/run and deploy/local/test: find Swift, install missing system packages.
# Sourced, not run.

if ! command -v swift >/dev/null 2>&1 && [ -x /opt/swift/usr/bin/swift ]; then
    PATH="/opt/swift/usr/bin:$PATH"
fi
command -v swift >/dev/null 2>&1 || { echo "error: the Swift toolchain is not on PATH" >&2; exit 1; }

# install_packages PKG… installs the Debian packages that are missing (apt-get update first).
install_packages() {
    local missing=()
    for pkg in "$@"; do
        dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed" || missing+=("$pkg")
    done
    [ ${#missing[@]} -eq 0 ] && return 0
    local sudo=""
    [ "$(id -u)" -ne 0 ] && sudo="sudo"
    echo "installing: ${missing[*]}" >&2
    $sudo apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
}

# libjs-leaflet: the map library of the web app the gateway serves (web/), at /vendor/leaflet/.
# libraft-dev, libuv1-dev, libdqlite-dev: a replicated database (issue 34: Raft, and the VFS whose commits it carries).
SYSTEM_PACKAGES=(libzmq3-dev libsqlite3-dev libsodium-dev libturbojpeg0-dev libhttp-parser-dev pkg-config libjs-leaflet libraft-dev libuv1-dev libdqlite-dev)
