#!/usr/bin/env bash
# Install the system libraries that the examples' headless renderer needs, if they are missing.
#
# The example scenes open real pyglet windows; with --headless (and in the test suite) pyglet
# renders offscreen through EGL, with Mesa's llvmpipe as the software OpenGL driver, so no
# screen, X server or GPU is needed. On Debian and Ubuntu that takes the packages below.
#
# Idempotent and quick: when every package is installed already (checked with dpkg-query) it
# does nothing, and never runs apt-get update. It installs only as root on a system with
# apt-get; anywhere else it says what is missing and how to get it.
#
# Usage: scripts/setup-system.sh [--check]
#   --check   only report; exit 1 if something is missing, install nothing.
set -euo pipefail

# Each package, and why pyglet needs it in headless mode (found by listing the shared
# libraries a headless pyglet 2.1 process maps while it draws shapes and a label).
PACKAGES=(
    libegl1           # libEGL.so.1, the EGL loader that pyglet.options["headless"] opens
    libegl-mesa0      # Mesa's EGL implementation behind it (the surfaceless/device platforms)
    libgl1-mesa-dri   # swrast_dri.so: llvmpipe, the software OpenGL rasteriser
    libgl1            # libGL.so.1: pyglet on Linux resolves GL functions there, even headless
    libfontconfig1    # pyglet's text layout finds fonts through fontconfig (the HUD labels)
    libfreetype6      # ... and renders their glyphs with FreeType
    fonts-dejavu-core # at least one font for fontconfig to find
)

check_only=0
case "${1:-}" in
    "") ;;
    --check) check_only=1 ;;
    -h | --help) sed -n '2,13p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "setup-system: unknown option: $1 (try --help)" >&2; exit 2 ;;
esac

if ! command -v dpkg-query >/dev/null 2>&1; then
    # macOS and Windows: pyglet uses the platform's own OpenGL, there is nothing to install
    # (pyglet's headless mode needs EGL, so it is Linux only). Other Linux distributions: the
    # equivalent of Mesa's EGL and DRI drivers, libGL, fontconfig and a font.
    echo "setup-system: not a Debian-based system; nothing installed." \
        "On Linux, the headless examples need Mesa's EGL and software GL drivers (or run them" \
        "in a window under xvfb-run)."
    exit 0
fi

missing=()
for package in "${PACKAGES[@]}"; do
    status=$(dpkg-query -W -f='${Status}' "$package" 2>/dev/null || true)
    if [[ "$status" != "install ok installed" ]]; then
        missing+=("$package")
    fi
done

if ((${#missing[@]} == 0)); then
    echo "setup-system: headless rendering packages present (${PACKAGES[*]})."
    exit 0
fi

echo "setup-system: missing: ${missing[*]}"
if ((check_only)); then
    exit 1
fi
if [[ $(id -u) -ne 0 ]] || ! command -v apt-get >/dev/null 2>&1; then
    echo "setup-system: cannot install them (this needs root and apt-get). Run:" >&2
    echo "    sudo apt-get update && sudo apt-get install --no-install-recommends ${missing[*]}" >&2
    exit 1
fi

export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq --no-install-recommends "${missing[@]}"
echo "setup-system: installed ${missing[*]}."
