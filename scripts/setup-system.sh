#!/usr/bin/env bash
# Install the system packages ecs_spatial's set-up needs, if they are missing:
#
#   - required: the libraries the examples' headless renderer needs (below);
#   - optional: a C compiler and the Python headers of $PYTHON (default python3), which build
#     the compiled core, ecs_spatial._cquadtree. Without them the package installs pure
#     Python and works the same, only slower: this script then says so and carries on.
#
# Idempotent and quick: when everything is present (dpkg-query for the renderer's packages,
# a 0.2 s syntax-only compile of '#include <Python.h>' for the toolchain) it installs nothing
# and never runs apt-get update. It installs only as root on a system with apt-get; anywhere
# else it says what is missing and how to get it, and fails only for the required packages.
#
# Usage: scripts/setup-system.sh [--check]
#   --check   only report; exit 1 if a required package is missing, install nothing.
set -euo pipefail

# The example scenes open real pyglet windows; with --headless (and in the test suite) pyglet
# renders offscreen through EGL, with Mesa's llvmpipe as the software OpenGL driver, so no
# screen, X server or GPU is needed. Each package, and why pyglet needs it in headless mode
# (found by listing the shared libraries a headless pyglet 2.1 process maps while it draws
# shapes and a label):
PACKAGES=(
    libegl1           # libEGL.so.1, the EGL loader that pyglet.options["headless"] opens
    libegl-mesa0      # Mesa's EGL implementation behind it (the surfaceless/device platforms)
    libgl1-mesa-dri   # swrast_dri.so: llvmpipe, the software OpenGL rasteriser
    libgl1            # libGL.so.1: pyglet on Linux resolves GL functions there, even headless
    libfontconfig1    # pyglet's text layout finds fonts through fontconfig (the HUD labels)
    libfreetype6      # ... and renders their glyphs with FreeType
    fonts-dejavu-core # at least one font for fontconfig to find
)
PYTHON="${PYTHON:-python3}"

check_only=0
case "${1:-}" in
    "") ;;
    --check) check_only=1 ;;
    -h | --help) sed -n '2,15p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "setup-system: unknown option: $1 (try --help)" >&2; exit 2 ;;
esac

can_apt=0
if [[ $(id -u) -eq 0 ]] && command -v apt-get >/dev/null 2>&1 \
    && command -v dpkg-query >/dev/null 2>&1; then
    can_apt=1
fi

# ---------------------------------------------------------------- the build toolchain (optional)
# What setuptools will use to build the core for $PYTHON: its compiler ($CC, else the one the
# interpreter was built with, as setuptools does) and its own Python.h (a Python from pyenv,
# conda or uv carries its headers; Debian's /usr/bin/python3.X takes them from python3.X-dev).
toolchain_problem=""   # "" when the core can be built
toolchain_packages=()  # the Debian packages that would fix it, if any do
toolchain_hint=""      # how to fix it where no package does
py_version="" py_include="" py_base="" cc_name=""

probe_toolchain() {
    toolchain_problem="" toolchain_packages=() toolchain_hint=""
    local probe
    if ! probe=$("$PYTHON" -c '
import os, shlex, sys, sysconfig
cc = os.environ.get("CC") or sysconfig.get_config_var("CC") or "cc"
print("%d.%d" % sys.version_info[:2])
print(sysconfig.get_paths()["include"])
print(sys.base_prefix)
print((shlex.split(cc) or ["cc"])[0])' 2>/dev/null); then
        toolchain_problem="'$PYTHON' does not run"
        toolchain_hint="set PYTHON to the interpreter that will build the package"
        return
    fi
    { read -r py_version; read -r py_include; read -r py_base; read -r cc_name; } <<<"$probe" || true
    if ! command -v "$cc_name" >/dev/null 2>&1; then
        toolchain_problem="no C compiler ($cc_name)"
        case "$cc_name" in
            cc | gcc | *-gcc) toolchain_packages=(gcc libc6-dev) ;;
            *) toolchain_hint="install $cc_name, or set CC to a C compiler you have" ;;
        esac
    elif [[ ! -f "$py_include/Python.h" ]]; then
        toolchain_problem="no Python.h for $PYTHON (Python $py_version, in $py_include)"
        if [[ "$py_base" == /usr && "$py_include" == "/usr/include/python$py_version" ]]; then
            # The distribution's own interpreter: python3-dev would fit only the default
            # python3, python3.X-dev fits this one whichever it is.
            toolchain_packages=("python$py_version-dev")
        else
            toolchain_hint="this Python ($py_base) is not the system's: its headers come with its own installation"
        fi
    elif ! printf '#include <Python.h>\n' \
        | "$cc_name" -I"$py_include" -fsyntax-only -x c - >/dev/null 2>&1; then
        toolchain_problem="$cc_name cannot compile against Python.h (the C library's headers?)"
        toolchain_packages=(libc6-dev)
    fi
}

probe_toolchain
if [[ -n "$toolchain_problem" && ${#toolchain_packages[@]} -gt 0 ]] \
    && command -v dpkg-query >/dev/null 2>&1; then
    # Keep only the packages not installed yet (installed ones would not help).
    wanted=()
    for package in "${toolchain_packages[@]}"; do
        status=$(dpkg-query -W -f='${Status}' "$package" 2>/dev/null || true)
        [[ "$status" == "install ok installed" ]] || wanted+=("$package")
    done
    toolchain_packages=(${wanted[@]+"${wanted[@]}"})
fi

# ---------------------------------------------------------------- the renderer's packages (required)
missing=()
if command -v dpkg-query >/dev/null 2>&1; then
    for package in "${PACKAGES[@]}"; do
        status=$(dpkg-query -W -f='${Status}' "$package" 2>/dev/null || true)
        if [[ "$status" != "install ok installed" ]]; then
            missing+=("$package")
        fi
    done
fi

report_toolchain() {
    if [[ -z "$toolchain_problem" ]]; then
        echo "setup-system: C compiler ($cc_name) and Python $py_version headers present:" \
            "the compiled core will be built."
        return
    fi
    local hint="$toolchain_hint"
    if ((${#toolchain_packages[@]} > 0)); then
        hint="apt-get install ${toolchain_packages[*]}"
    fi
    echo "setup-system: $toolchain_problem: the pure-Python index will be used" \
        "(to build the compiled core: ${hint:-install a C compiler})."
}

# ---------------------------------------------------------------- install what is missing
if ((!check_only && can_apt)) \
    && ((${#missing[@]} + ${#toolchain_packages[@]} > 0)); then
    export DEBIAN_FRONTEND=noninteractive
    wanted=(${missing[@]+"${missing[@]}"} ${toolchain_packages[@]+"${toolchain_packages[@]}"})
    echo "setup-system: installing ${wanted[*]}"
    if ! apt-get update -qq; then
        ((${#missing[@]} == 0)) || exit 1  # the renderer's packages are required
        echo "setup-system: apt-get update failed; not installing ${toolchain_packages[*]}" >&2
        toolchain_packages=()
    fi
    if ((${#missing[@]} > 0)); then
        apt-get install -y -qq --no-install-recommends "${missing[@]}"
        echo "setup-system: installed ${missing[*]}."
        missing=()
    fi
    if ((${#toolchain_packages[@]} > 0)); then
        # Optional: a failure here leaves the pure-Python index, never a failed set-up.
        apt-get install -y -qq --no-install-recommends "${toolchain_packages[@]}" \
            || echo "setup-system: could not install ${toolchain_packages[*]}" >&2
        probe_toolchain
    fi
fi

report_toolchain
if ! command -v dpkg-query >/dev/null 2>&1; then
    # macOS and Windows: pyglet uses the platform's own OpenGL, there is nothing to install
    # (pyglet's headless mode needs EGL, so it is Linux only). Other Linux distributions: the
    # equivalent of Mesa's EGL and DRI drivers, libGL, fontconfig and a font.
    echo "setup-system: not a Debian-based system; nothing installed." \
        "On Linux, the headless examples need Mesa's EGL and software GL drivers (or run them" \
        "in a window under xvfb-run)."
    exit 0
fi
if ((${#missing[@]} == 0)); then
    echo "setup-system: headless rendering packages present (${PACKAGES[*]})."
    exit 0
fi
echo "setup-system: missing: ${missing[*]}"
if ((!check_only)); then
    echo "setup-system: cannot install them (this needs root and apt-get). Run:" >&2
    echo "    sudo apt-get update && sudo apt-get install --no-install-recommends ${missing[*]}" >&2
fi
exit 1
