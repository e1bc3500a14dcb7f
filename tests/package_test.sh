#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# package_test.sh PACKAGES - the Debian packages of `tools/dev package` (the .deb and
# .ddeb files in the folder PACKAGES) as an administrator gets them:
#   1. lintian: no error on any of them, and every warning's tag explained in
#      packaging/README.md;
#   2. contents: each file in the package it belongs to (tsmine, tsmine-bench), nothing
#      under /usr/local, the programs stripped, their symbols in the -dbgsym packages
#      under their build IDs;
#   3. as root, with mmdebstrap: in a fresh Debian chroot (minbase, systemd and the
#      packages' dependencies) `dpkg -i` both packages: the tsmine user exists,
#      /etc/tsmine is 0750 root:tsmine, the unit is enabled and passes `systemd-analyze
#      verify`; tsmined starts as its unit starts it (no systemd runs in a chroot:
#      ExecStartPre's check, then ExecStart as user tsmine with the unit's state and
#      runtime directories), `tsmine status` answers, a replayed feed is counted,
#      ExecReload succeeds, SIGTERM checkpoints; an upgrade to a later version keeps the
#      edited conffile and the state, and the restarted daemon restores the stream;
#      remove keeps /var/lib/tsmine and the conffile; purge deletes both and the
#      enablement, and keeps the user;
#   4. with systemd-nspawn: the same chroot booted as a container (its own systemd, a
#      private network): `apt install` enables and starts tsmined.service with the
#      packaged configuration, `tsmine status` answers, a replayed feed is counted,
#      `systemctl reload` succeeds, and fails on an invalid configuration while the
#      service runs on; an upgrade (dpkg -i) restarts it and it restores its
#      checkpoint; `systemctl stop`, `apt remove` (the state, in
#      /var/lib/private/tsmine with DynamicUser, stays), `apt purge`.
# Without root or mmdebstrap, steps 3 and 4 are skipped, saying so; step 4 without
# systemd-nspawn, or where the container does not boot (its log shown). The chroot
# comes from Debian's mirror (about 50 s, network needed); TSM_PACKAGE_CHROOT_TAR=FILE
# keeps it in FILE and reuses it on later runs. Exit 0, or 1 at the first failure,
# saying what.
set -euo pipefail

pkgs=$(cd "${1:?usage: package_test.sh PACKAGES}" && pwd)
source=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
t0=$(date +%s)

fail() {
    echo "package_test: FAIL: $*" >&2
    exit 1
}
step() { echo "package_test: [$(($(date +%s) - t0)) s] $*"; }

deb=$(ls "$pkgs"/tsmine_*.deb)
bench=$(ls "$pkgs"/tsmine-bench_*.deb)

# ---- 1. lintian ----
step "lintian $(cd "$pkgs" && echo *.deb *.ddeb)"
lint=$(lintian --tag-display-limit 0 "$pkgs"/*.deb "$pkgs"/*.ddeb 2>&1 |
    grep -v 'running with root privileges' || true)
[ -z "$lint" ] || echo "$lint"
if grep -q '^E: ' <<<"$lint"; then
    fail "lintian reports errors (above)"
fi
while read -r tag; do
    [ -z "$tag" ] || grep -q -- "$tag" "$source/packaging/README.md" ||
        fail "lintian warning $tag is not explained in packaging/README.md"
done < <(sed -n 's/^W: [^ ]* \([a-z0-9-]*\).*/\1/p' <<<"$lint" | sort -u)

# ---- 2. contents ----
step "contents"
# has DEB PATH...: each PATH (relative to /) is in DEB
has() {
    local list p
    list=$(dpkg-deb -c "$1" | awk '{print $6}' | sed 's|^\./||')
    shift
    for p in "$@"; do
        grep -qx "$p" <<<"$list" || fail "$p is not in the package"
    done
}
has "$deb" usr/bin/tsmine usr/bin/tsmined usr/lib/systemd/system/tsmined.service \
    usr/lib/sysusers.d/tsmine.conf usr/lib/tmpfiles.d/tsmine.conf etc/tsmine/tsmined.conf \
    usr/share/man/man1/tsmine.1.gz usr/share/man/man8/tsmined.8.gz \
    usr/share/man/man5/tsmined.conf.5.gz usr/share/tsmine/tsmine.proto \
    usr/share/doc/tsmine/copyright usr/share/doc/tsmine/changelog.Debian.gz
has "$bench" usr/bin/tsmine-bench usr/bin/tsmine-loadgen usr/share/man/man1/tsmine-bench.1.gz \
    usr/share/man/man1/tsmine-loadgen.1.gz usr/share/doc/tsmine-bench/copyright \
    usr/share/doc/tsmine-bench/changelog.Debian.gz
if dpkg-deb -c "$deb" | grep -q 'usr/bin/tsmine-\|usr/local'; then
    fail "tsmine holds a benchmark or something under /usr/local"
fi
[ "$(dpkg-deb -I "$deb" conffiles)" = /etc/tsmine/tsmined.conf ] || fail "the conffile is not /etc/tsmine/tsmined.conf"
work=$(mktemp -d "${TMPDIR:-/tmp}/tsmine-package.XXXXXX")
root="" pid="" nspawn=""
# cleanup: stops a daemon left running, unmounts the chroot's /proc, deletes WORK
cleanup() {
    if [ -n "$pid" ] && kill "$pid" 2>/dev/null; then
        wait "$pid" || true
    fi
    if [ -n "$nspawn" ] && kill -TERM "$nspawn" 2>/dev/null; then
        wait "$nspawn" || true # the container halts on SIGTERM
    fi
    if [ -n "$root" ] && mountpoint -q "$root/proc"; then
        umount "$root/proc" || {
            echo "package_test: $root/proc stays mounted; $work left in place" >&2
            return
        }
    fi
    rm -rf --one-file-system "$work"
}
trap cleanup EXIT
for f in "$pkgs"/*.deb "$pkgs"/*.ddeb; do
    dpkg-deb -x "$f" "$work/x"
done
for exe in tsmine tsmined tsmine-bench tsmine-loadgen; do
    elf=$work/x/usr/bin/$exe
    if readelf -S --wide "$elf" | grep -q ' \.symtab \| \.debug_info '; then
        fail "usr/bin/$exe is not stripped"
    fi
    id=$(readelf -n "$elf" | sed -n 's/.*Build ID: \([0-9a-f]*\)/\1/p')
    [ -s "$work/x/usr/lib/debug/.build-id/${id:0:2}/${id:2}.debug" ] ||
        fail "no -dbgsym file for usr/bin/$exe (build ID $id)"
done

# ---- 3. install, run, upgrade, remove, purge in a chroot ----
if [ "$(id -u)" -ne 0 ] || ! command -v mmdebstrap >/dev/null; then
    step "SKIP install/upgrade/purge: needs root and mmdebstrap (Debian package mmdebstrap)"
    exit 0
fi
root=$work/root
mkdir "$root"
# the packages' dependencies, first alternatives, without versions
deps=$(for f in "$deb" "$bench"; do dpkg-deb -f "$f" Depends; done |
    tr ',' '\n' | sed 's/|.*//; s/(.*)//; s/ //g' | sort -u | paste -sd, -)
suite=$(sed -n 's/^VERSION_CODENAME=//p' /etc/os-release)
tar=${TSM_PACKAGE_CHROOT_TAR:-}
if [ -n "$tar" ] && [ -s "$tar" ]; then
    step "chroot from $tar"
    tar -C "$root" -xf "$tar"
else
    step "chroot: mmdebstrap $suite (minbase, systemd, $deps)"
    mmdebstrap --quiet --variant=minbase --include="systemd,$deps" "$suite" "${tar:-$root}" ||
        fail "mmdebstrap could not make the chroot (Debian's mirror unreachable? not root?)"
    [ -z "$tar" ] || tar -C "$root" -xf "$tar"
fi
mount -t proc proc "$root/proc"
# in_root CMD...: CMD in the chroot with a clean environment
in_root() { chroot "$root" env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin LANG=C.UTF-8 "$@"; }
# (/var/tmp: a booted container mounts a tmpfs on /tmp)
cp "$deb" "$bench" "$root/var/tmp/"
head -n 2001 "$source/tests/data/art_daily_jumpsup.csv" >"$root/var/tmp/feed.csv"

step "install: dpkg -i $(basename "$deb") $(basename "$bench")"
in_root dpkg -i "/var/tmp/$(basename "$deb")" "/var/tmp/$(basename "$bench")"
in_root getent passwd tsmine >/dev/null || fail "no tsmine user after install"
in_root id -nG tsmine | grep -qw video || fail "tsmine is not in the video group"
# (stat in the chroot: its own user and group names)
[ "$(in_root stat -c '%a %U %G' /etc/tsmine)" = "750 root tsmine" ] ||
    fail "/etc/tsmine is $(in_root stat -c '%a %U %G' /etc/tsmine), not 750 root tsmine"
[ "$(in_root stat -c '%a %U %G' /etc/tsmine/tsmined.conf)" = "640 root tsmine" ] ||
    fail "/etc/tsmine/tsmined.conf is not 0640 root:tsmine"
wants=$root/etc/systemd/system/multi-user.target.wants/tsmined.service
[ -L "$wants" ] || fail "tsmined.service is not enabled after install"
# --man=no: a minbase chroot has no man; the pages are checked by tests/man_test.sh
in_root systemd-analyze verify --man=no /usr/lib/systemd/system/tsmined.service ||
    fail "systemd-analyze verify tsmined.service"

# The daemon on free loopback ports (the chroot shares this machine's network), from
# the conffile, edited as an administrator would.
read -r -a port < <(python3 -c 'import socket
ss = [socket.socket() for _ in range(4)]
for s in ss:
    s.bind(("127.0.0.1", 0))
print(" ".join(str(s.getsockname()[1]) for s in ss))')
printf '%s\n' "# package_test.sh" "ingest = { endpoints = [ \"tcp://127.0.0.1:${port[0]}\" ]; };" \
    "alerts = { endpoint = \"tcp://127.0.0.1:${port[1]}\"; };" \
    "control = { endpoint = \"tcp://127.0.0.1:${port[2]}\"; };" \
    "metrics = { listen = \"127.0.0.1:${port[3]}\"; };" "backend = \"cpu\";" "threads = 2;" \
    "streams = { default = { window = 1024; subsequence = 64; hop = 256; }; };" \
    >>"$root/etc/tsmine/tsmined.conf"
control=tcp://127.0.0.1:${port[2]}
unit=$root/usr/lib/systemd/system/tsmined.service
# "${as_unit[@]}" COMMAND: the sh COMMAND in the chroot as the unit runs its commands
as_unit=(chroot --userspec=tsmine:tsmine "$root" env -i PATH=/usr/bin:/bin
    STATE_DIRECTORY=/var/lib/tsmine RUNTIME_DIRECTORY=/run/tsmine sh -c)

# start_daemon: what systemd does for the unit: the state and runtime directories
# (StateDirectory=, RuntimeDirectory=), ExecStartPre=, then ExecStart= as User=, with
# UMask=; waits until `tsmine status` answers.
start_daemon() {
    local pre start tries=0
    pre=$(sed -n 's/^ExecStartPre=//p' "$unit")
    start=$(sed -n 's/^ExecStart=//p' "$unit")
    in_root install -d -m 0750 -o tsmine -g tsmine /var/lib/tsmine
    in_root install -d -m 0755 -o tsmine -g tsmine /run/tsmine
    "${as_unit[@]}" "umask 0027; $pre" || fail "ExecStartPre ($pre) failed"
    "${as_unit[@]}" "umask 0027; exec $start" 2>"$work/tsmined.log" &
    pid=$! # chroot, env and sh exec: the daemon's own
    until in_root tsmine status --endpoint "$control" --timeout-ms 500 >/dev/null 2>&1; do
        tries=$((tries + 1))
        if ! kill -0 "$pid" 2>/dev/null || [ $tries -ge 40 ]; then
            cat "$work/tsmined.log" >&2
            fail "tsmined did not answer tsmine status"
        fi
        sleep 0.25
    done
}
# stop_daemon: SIGTERM (systemctl stop); it must exit 0 after its checkpoint
stop_daemon() {
    local st=0
    kill -TERM "$pid"
    wait "$pid" || st=$?
    pid=""
    [ $st -eq 0 ] || fail "tsmined exited with status $st on SIGTERM"
}
# samples: the samples the daemon counts for the stream pkg/test
samples() {
    in_root tsmine status --endpoint "$control" --stream pkg/test 2>/dev/null |
        python3 -c 'import json, sys; print(json.load(sys.stdin)["streams"]["pkg/test"]["samples"])' ||
        echo 0
}

step "start as the unit would, replay 2000 samples, reload, stop"
start_daemon
in_root tsmine replay --endpoint "tcp://127.0.0.1:${port[0]}" --stream pkg/test /var/tmp/feed.csv
for _ in $(seq 40); do
    [ "$(samples)" = 2000 ] && break
    sleep 0.25
done
[ "$(samples)" = 2000 ] || fail "tsmined counted $(samples) of 2000 samples"
reload=$(sed -n 's/^ExecReload=//p' "$unit")
"${as_unit[@]}" "${reload//\$MAINPID/$pid}" || fail "ExecReload ($reload) failed"
stop_daemon
[ -n "$(ls -A "$root/var/lib/tsmine")" ] || fail "no checkpoint in /var/lib/tsmine"

step "upgrade to a later version"
for f in "$deb" "$bench"; do
    rm -rf "$work/up"
    dpkg-deb -R "$f" "$work/up"
    sed -i 's/^Version: .*/&+up1/' "$work/up/DEBIAN/control"
    dpkg-deb -b "$work/up" "$root/var/tmp/up-$(basename "$f")" >/dev/null
done
in_root sh -c 'dpkg -i /var/tmp/up-*.deb'
in_root dpkg-query -W -f "\${Version}" tsmine | grep -q '+up1$' || fail "tsmine was not upgraded"
grep -q "127.0.0.1:${port[2]}" "$root/etc/tsmine/tsmined.conf" ||
    fail "the upgrade lost the conffile's local edit"
[ -L "$wants" ] || fail "the upgrade disabled tsmined.service"
start_daemon
[ "$(samples)" = 2000 ] || fail "after the upgrade the stream has $(samples) samples, not 2000"
stop_daemon

step "remove"
in_root dpkg -r tsmine-bench tsmine
[ ! -e "$root/usr/bin/tsmined" ] || fail "remove left /usr/bin/tsmined"
[ -n "$(ls -A "$root/var/lib/tsmine")" ] || fail "remove deleted the state in /var/lib/tsmine"
[ -f "$root/etc/tsmine/tsmined.conf" ] || fail "remove deleted the conffile"

step "purge"
in_root dpkg -P tsmine # (tsmine-bench, without conffiles, is gone with remove)
[ ! -e "$root/var/lib/tsmine" ] || fail "purge left /var/lib/tsmine"
[ ! -e "$root/etc/tsmine" ] || fail "purge left /etc/tsmine"
if [ -e "$wants" ] || [ -L "$wants" ]; then
    fail "purge left tsmined.service enabled"
fi
in_root getent passwd tsmine >/dev/null || fail "purge removed the tsmine user"

# ---- 4. the same under systemd: the chroot booted as a container ----
if ! command -v systemd-nspawn >/dev/null; then
    step "SKIP the booted container: no systemd-nspawn (Debian package systemd-container)"
    step "PASS"
    exit 0
fi
umount "$root/proc"
step "boot the chroot: systemd-nspawn -b --private-network"
systemd-nspawn --register=no --keep-unit --quiet --private-network -D "$root" -b \
    >"$work/boot.log" 2>&1 &
nspawn=$!
leader=""
# in_boot CMD...: CMD in the booted container (its namespaces and root)
in_boot() {
    nsenter --target "$leader" --mount --uts --ipc --net --pid --root --wd -- \
        env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin LANG=C.UTF-8 "$@"
}
# boot: up to 90 s for the container's systemd to finish starting (its first process
# is nspawn's own child until it execs systemd, hence the leader is looked up anew)
state=""
for _ in $(seq 180); do
    leader=$(ps -o pid= --ppid "$nspawn" | head -n 1 | tr -d ' ' || true)
    if [ -n "$leader" ]; then
        state=$(in_boot systemctl is-system-running 2>/dev/null || true)
        case "$state" in running | degraded) break ;; esac
    fi
    kill -0 "$nspawn" 2>/dev/null || break
    sleep 0.5
done
if [ "$state" != running ] && [ "$state" != degraded ]; then
    tail -n 20 "$work/boot.log"
    step "SKIP the booted container: systemd-nspawn did not boot it (state '$state', log above)"
    step "PASS"
    exit 0
fi
# apt: the README's commands (the dependencies are there already: no download)
apt=(env DEBIAN_FRONTEND=noninteractive apt-get -y -q)
step "booted ($state); apt install: postinst enables and starts tsmined.service"
in_boot "${apt[@]}" install "/var/tmp/$(basename "$deb")" "/var/tmp/$(basename "$bench")" \
    >/dev/null
[ "$(in_boot systemctl is-enabled tsmined)" = enabled ] || fail "tsmined.service not enabled"
# active: the service, with the packaged configuration (loopback, the container's own)
active() {
    in_boot systemctl is-active --quiet tsmined ||
        { in_boot journalctl -u tsmined --no-pager -n 30 >&2; fail "tsmined.service: $1"; }
}
active "not active after install"
in_boot tsmine status >/dev/null || fail "tsmine status: no answer from the service"
in_boot tsmine replay --stream pkg/test /var/tmp/feed.csv
boot_samples() {
    in_boot tsmine status --stream pkg/test 2>/dev/null |
        python3 -c 'import json, sys; print(json.load(sys.stdin)["streams"]["pkg/test"]["samples"])' ||
        echo 0
}
for _ in $(seq 40); do
    [ "$(boot_samples)" = 2000 ] && break
    sleep 0.25
done
[ "$(boot_samples)" = 2000 ] || fail "the service counted $(boot_samples) of 2000 samples"

step "systemctl reload: a good configuration, then a refused one"
in_boot systemctl reload tsmined || fail "systemctl reload tsmined failed"
conf=$root/etc/tsmine/tsmined.conf
cp "$conf" "$work/conf.good"
echo 'backend = "no-such-backend";' >>"$conf"
if in_boot systemctl reload tsmined 2>/dev/null; then
    fail "systemctl reload succeeded with an invalid configuration"
fi
active "stopped by a refused reload"
cp "$work/conf.good" "$conf"

step "upgrade: postinst restarts the service, which restores its checkpoint"
in_boot sh -c 'dpkg -i /var/tmp/up-*.deb' >/dev/null
active "not active after the upgrade"
[ "$(boot_samples)" = 2000 ] || fail "after the upgrade the stream has $(boot_samples) samples"

step "systemctl stop, apt remove, apt purge"
in_boot systemctl stop tsmined
if in_boot systemctl is-active --quiet tsmined; then
    fail "tsmined.service still active after systemctl stop"
fi
in_boot "${apt[@]}" remove tsmine-bench tsmine >/dev/null
[ -e "$root/var/lib/private/tsmine" ] || fail "remove deleted the service's state"
in_boot "${apt[@]}" purge tsmine >/dev/null
if [ -e "$root/var/lib/private/tsmine" ] || [ -L "$root/var/lib/tsmine" ]; then
    fail "purge left the service's state"
fi
kill -TERM "$nspawn"
wait "$nspawn" || true
nspawn=""
step "PASS"
