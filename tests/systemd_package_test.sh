#!/usr/bin/env bash
# The Debian package and its systemd units under a real systemd.
#
#   systemd_package_test.sh <build dir> <source dir>
#
# 1. cpack builds the .deb from the build tree; dpkg-deb checks its control
#    fields and dpkg -x unpacks it into a staging root, whose tree, binaries
#    (--version) and pkg-config file (a program compiled and linked against
#    it) are checked; dpkg --root installs and purges it in an empty root.
# 2. systemd-nspawn boots the host's own systemd in a container
#    (--volatile=yes: a throwaway root, the host's /usr read-only) with the
#    unpacked package laid over /usr, so the units and binaries systemd sees
#    are the package's. Its network namespace has loopback only (nothing to
#    wait for: systemd-networkd-wait-online is masked). Driven with nsenter
#    and systemctl, the container enables ps-server@0 and @1 under
#    taups-shards.target, waits for READY (Type=notify) and the STATUS=
#    line, trains a short job through ps-worker@0, kill -9s shard 0's main
#    pid, waits for systemd to restart it, checks with ps_admin stats that
#    the restarted shard holds the trained table at the version it had
#    before the kill (from its StateDirectory checkpoint) and that it logged
#    the restore, and reads the journal by priority.
# 3. A worker rides through a shard restart: a second, longer run of
#    ps-worker@0 (300 steps) is at step 20 when ps-server@0's main pid is
#    kill -9ed again; systemd restarts the shard (RestartSec=2s), and the
#    worker, its calls retrying meanwhile (--retry_budget_s, 60 s), ends
#    with Result=success and no restart of its own. Its JSON summary counts
#    all 300 steps and one restart, of shard 0 ("shard_restarts_by_shard":
#    [1,0]), its journal says it saw shard 0's new incarnation, the shard's
#    new process logged its restore, and ps-server@1 never restarted.
# 4. The other shard feeds the watchdog, the unit's `systemd-analyze
#    security` exposure is at most 1.5, and taups-shards.target stops both.
#
# Exit 77 (skipped) when not root or a tool is missing, or when nspawn cannot
# boot a container here. The container and the scratch directory go on every
# exit path.
set -euo pipefail
build_dir=$(cd "$1" && pwd)
source_dir=$(cd "$2" && pwd)

skip() {
  echo "SKIPPED: $*"
  exit 77
}
fail() {
  echo "FAILED: $*" >&2
  exit 1
}
[[ $(id -u) -eq 0 ]] || skip "needs root (systemd-nspawn, dpkg -x into a staging root)"
for tool in cpack dpkg-deb systemd-nspawn nsenter pkg-config c++; do
  command -v "$tool" >/dev/null ||
    skip "$tool not found (deploy/setup.sh installs systemd-container and dpkg-dev)"
done

scratch=$(mktemp -d /tmp/taups-systemd-test.XXXXXX)
nspawn_pid=""
machine="taups-test-$$"
cleanup() {
  local rc=$?
  if [[ -n "$nspawn_pid" ]] && kill -0 "$nspawn_pid" 2>/dev/null; then
    kill -TERM "$nspawn_pid" 2>/dev/null || true  # the container powers off
    for _ in $(seq 1 100); do
      kill -0 "$nspawn_pid" 2>/dev/null || break
      sleep 0.1
    done
    kill -KILL "$nspawn_pid" 2>/dev/null || true
    wait "$nspawn_pid" 2>/dev/null || true
  fi
  if [[ $rc -ne 0 && $rc -ne 77 && -f "$scratch/nspawn.log" ]]; then
    echo "--- container console (last 40 lines) ---"
    tail -n 40 "$scratch/nspawn.log"
  fi
  rm -rf "$scratch"
}
trap cleanup EXIT

version=$(sed -n 's/^set(CPACK_PACKAGE_VERSION "\(.*\)")$/\1/p' "$build_dir/CPackConfig.cmake")
[[ -n "$version" ]] || fail "no CPACK_PACKAGE_VERSION in $build_dir/CPackConfig.cmake"

# --- 1. the package -------------------------------------------------------
echo "== cpack -G DEB (version $version)"
cpack -G DEB --config "$build_dir/CPackConfig.cmake" -B "$scratch/pkg" \
  >"$scratch/cpack.log" 2>&1 || { cat "$scratch/cpack.log"; fail "cpack failed"; }
deb=$(ls "$scratch"/pkg/taups_*.deb)
echo "built $(basename "$deb") ($(du -h "$deb" | cut -f1))"
[[ $(dpkg-deb -f "$deb" Package) == taups ]] || fail "Package is not taups"
[[ $(dpkg-deb -f "$deb" Version) == "$version" ]] || fail "Version is not $version"
depends=$(dpkg-deb -f "$deb" Depends)
[[ "$depends" == *libgrpc++* ]] || fail "Depends lacks libgrpc++: $depends"
echo "Depends: $depends"

stage="$scratch/stage"
dpkg -x "$deb" "$stage"
# lib/ or lib/<multiarch>/, as GNUInstallDirs chose.
pc_file=$(cd "$stage/usr" && find lib -name taups.pc | head -n 1)
[[ -n "$pc_file" ]] || fail "package lacks taups.pc"
libdir=$(dirname "$(dirname "$pc_file")")
for path in usr/bin/ps_server usr/bin/ps_worker usr/bin/ps_admin usr/bin/ps_health_probe \
    usr/lib/systemd/system/ps-server@.service usr/lib/systemd/system/ps-worker@.service \
    usr/lib/systemd/system/taups-shards.target \
    usr/share/taups/config/cluster.txt.example usr/share/taups/config/ps-server.env.example \
    usr/share/taups/config/ps-worker.env.example usr/share/taups/config/cluster.textproto.example \
    usr/share/taups/prometheus/prometheus.yml.example usr/share/taups/prometheus/taups-alerts.yml \
    usr/share/taups/prometheus/taups-dashboard.json \
    usr/share/doc/taups/copyright usr/share/doc/taups/README.md \
    usr/include/taups/client.h "usr/$libdir/libtaups_client.a" \
    "usr/$libdir/cmake/tauPS/tauPSConfig.cmake" "usr/$libdir/pkgconfig/taups.pc"; do
  [[ -e "$stage/$path" ]] || fail "package lacks /$path"
done
for program in ps_server ps_worker ps_admin ps_health_probe; do
  line=$("$stage/usr/bin/$program" --version)
  [[ "$line" == *"$version"* ]] || fail "$program --version says '$line', not $version"
done
echo "tree, --version: ok"

pc_dir="$stage/usr/$libdir/pkgconfig"
[[ $(PKG_CONFIG_PATH="$pc_dir" pkg-config --modversion taups) == "$version" ]] ||
  fail "pkg-config --modversion taups is not $version"
cat >"$scratch/uses_pc.cc" <<'EOF'
#include "taups/client.h"
int main() {
  taups::ClientOptions options;
  options.servers = {"127.0.0.1:1"};
  return taups::TableConfig::Dense("w", 4).name == "w" ? 0 : 1;
}
EOF
# shellcheck disable=SC2046  # pkg-config prints several words on purpose
c++ -std=c++20 "$scratch/uses_pc.cc" -o "$scratch/uses_pc" \
  $(PKG_CONFIG_PATH="$pc_dir" pkg-config --define-variable=prefix="$stage/usr" \
    --cflags --libs taups) || fail "cannot build against pkg-config taups"
"$scratch/uses_pc" || fail "the program built with pkg-config taups failed"
echo "pkg-config: ok"

# dpkg's own install and purge into an empty root: its database records the
# files, the maintainer scripts run (outside the root: it has no shell; the
# libraries the package depends on are not in that root's database either).
root="$scratch/root"
mkdir -p "$root/var/lib/dpkg/info" "$root/var/lib/dpkg/updates"
touch "$root/var/lib/dpkg/status"
dpkg_root=(dpkg --root="$root" --force-depends --force-script-chrootless --log=/dev/null)
"${dpkg_root[@]}" -i "$deb" >"$scratch/dpkg.log" 2>&1 ||
  { cat "$scratch/dpkg.log"; fail "dpkg --root -i failed"; }
[[ $("${dpkg_root[@]}" -s taups | sed -n 's/^Status: //p') == "install ok installed" ]] ||
  fail "dpkg --root does not list taups as installed"
"${dpkg_root[@]}" -L taups | grep -qx /usr/lib/systemd/system/ps-server@.service ||
  fail "dpkg -L taups lacks ps-server@.service"
"${dpkg_root[@]}" --purge taups >>"$scratch/dpkg.log" 2>&1 ||
  { cat "$scratch/dpkg.log"; fail "dpkg --root --purge failed"; }
[[ ! -e "$root/usr/bin/ps_server" ]] || fail "purge left /usr/bin/ps_server"
echo "dpkg --root install and purge: ok"

# --- 2. the units under systemd ------------------------------------------
echo "== booting systemd in a container (systemd-nspawn)"
systemd-nspawn -D / --volatile=yes --register=no --keep-unit -M "$machine" \
  --private-network \
  --overlay-ro=/usr:"$stage/usr":/usr --boot systemd.firstboot=off \
  systemd.mask=systemd-networkd-wait-online.service \
  </dev/null >"$scratch/nspawn.log" 2>&1 &
nspawn_pid=$!
boot_start=$(date +%s.%N)
init_pid=""
for _ in $(seq 1 100); do
  kill -0 "$nspawn_pid" 2>/dev/null ||
    skip "systemd-nspawn cannot boot a container here: $(tail -n 3 "$scratch/nspawn.log" | tr '\n' ' ')"
  init_pid=$(pgrep -P "$nspawn_pid" -x systemd || true)
  [[ -n "$init_pid" ]] && break
  sleep 0.1
done
[[ -n "$init_pid" ]] || skip "the container's systemd did not start within 10 s"
# Seconds since `date +%s.%N` printed $1.
since() { awk -v a="$1" -v b="$(date +%s.%N)" 'BEGIN { printf "%.2f", b - a }'; }
inside() { nsenter -t "$init_pid" -m -u -i -n -p -- "$@"; }

state=""
for _ in $(seq 1 600); do
  state=$(inside systemctl is-system-running 2>/dev/null || true)
  [[ "$state" == running || "$state" == degraded ]] && break
  sleep 0.1
done
[[ "$state" == running || "$state" == degraded ]] ||
  skip "the container's systemd did not finish booting (state '$state')"
printf 'container up in %s s (%s' "$(since "$boot_start")" "$state"
[[ "$state" == degraded ]] &&
  printf '; failed: %s' "$(inside systemctl --failed --plain --no-legend | awk '{print $1}' | tr '\n' ' ')"
echo ")"

# Two shards on loopback ports, checkpoints every second.
inside mkdir -p /etc/taups
inside sh -c 'printf "127.0.0.1:7100\n127.0.0.1:7101\n" >/etc/taups/cluster.txt'
inside sh -c 'cat >/etc/taups/ps-server.env' <<'EOF'
TAUPS_SERVER_FLAGS="--stats_interval_s=0 --checkpoint_interval_s=1"
TAUPS_FIRST_START=--start_empty
EOF
# The worker's settings for a job of $1 steps (read at each start of the unit).
worker_env() {
  inside sh -c 'cat >/etc/taups/ps-worker.env' <<EOF
TAUPS_SERVERS=127.0.0.1:7100,127.0.0.1:7101
TAUPS_WORKER_FLAGS="--num_workers=1 --model=ctr --steps=$1 --ctr_examples=20000 --eval_examples=2000 --device=cpu --log_every=20"
EOF
}
worker_env 60
inside systemctl daemon-reload
inside systemctl enable --quiet ps-server@0 ps-server@1
started=$(date +%s.%N)
inside systemctl start taups-shards.target  # returns once both sent READY=1
ready_s=$(since "$started")
for i in 0 1; do
  show=$(inside systemctl show -p ActiveState,SubState,StatusText,WatchdogUSec "ps-server@$i")
  echo "ps-server@$i: $(echo "$show" | tr '\n' ' ')"
  [[ "$show" == *ActiveState=active* ]] || fail "ps-server@$i is not active"
  [[ "$show" == *WatchdogUSec=20s* ]] || fail "ps-server@$i has no 20 s watchdog"
done
echo "both shards READY $ready_s s after systemctl start"
watchdog_start=$(inside systemctl show -p WatchdogTimestampMonotonic --value ps-server@1)
watchdog_since=$(date +%s.%N)
for _ in $(seq 1 100); do
  status=$(inside systemctl show -p StatusText --value ps-server@0)
  [[ "$status" == serving* ]] && break
  sleep 0.1
done
[[ "$status" == serving* ]] || fail "ps-server@0 sent no 'serving' STATUS= line: '$status'"

echo "== training a short job through ps-worker@0"
inside systemctl start --wait ps-worker@0 ||
  { inside journalctl -u ps-worker@0 --no-pager | tail -n 20; fail "ps-worker@0 failed"; }
summary=$(inside journalctl -u ps-worker@0 -o cat --no-pager | grep '^{' | tail -n 1)
echo "worker summary: $summary"
[[ "$summary" == *'"steps":60'* ]] || fail "ps-worker@0's summary does not count 60 steps"

# A checkpoint after training, so the restarted shard has the trained table.
for _ in $(seq 1 100); do
  status=$(inside systemctl show -p StatusText --value ps-server@0)
  [[ "$status" == *"last checkpoint"* ]] && break
  sleep 0.1
done
echo "ps-server@0 status: $status"
[[ "$status" == *"last checkpoint"* ]] || fail "ps-server@0 reports no checkpoint"
sleep 1.5  # one more timer checkpoint after the last push
# What shard 0 holds of the dense table now: after the restart it must hold
# the same version again (it started empty, so only its checkpoint has it).
admin=(ps_admin --servers=127.0.0.1:7100,127.0.0.1:7101 --table=ctr_mlp stats)
shard0_version() {
  inside "${admin[@]}" | sed -n 's/^shard 0 table ctr_mlp: version \([0-9]*\),.*/\1/p'
}
version_before=$(shard0_version)
(( ${version_before:-0} > 0 )) ||
  fail "ps_admin stats shows no trained version on shard 0: '$version_before'"

# kill -9 of ps-server@0's main pid, then wait (30 s at most) until systemd
# has restarted it for the $1-th time and the new process is READY; sets
# killed (when) and new_pid.
kill_shard0() {
  local old_pid show
  old_pid=$(inside systemctl show -p MainPID --value ps-server@0)
  inside kill -9 "$old_pid"
  killed=$(date +%s.%N)
  new_pid=""
  for _ in $(seq 1 300); do
    show=$(inside systemctl show -p ActiveState,MainPID,NRestarts ps-server@0)
    if [[ "$show" == *ActiveState=active* && "$show" != *"MainPID=$old_pid"* &&
          "$show" != *MainPID=0* && "$show" == *"NRestarts=$1"* ]]; then
      new_pid=$(echo "$show" | sed -n 's/^MainPID=//p')
      break
    fi
    sleep 0.1
  done
  [[ -n "$new_pid" ]] || fail "systemd did not restart ps-server@0 (restart $1): $show"
  echo "restarted as pid $new_pid, READY $(since "$killed") s after the kill (RestartSec=2s)"
}

echo "== kill -9 of ps-server@0's main pid"
kill_shard0 1
version_after=$(shard0_version)
[[ "$version_after" == "$version_before" ]] ||
  fail "shard 0 holds ctr_mlp at version '$version_after' after the restart, not $version_before"
echo "ps_admin stats: shard 0 restored ctr_mlp at version $version_after, as before the kill"
# The first start was empty: a restore line can only be the restarted shard's.
restored=$(inside journalctl -u ps-server@0 -o cat --no-pager | grep 'restored table' || true)
[[ -n "$restored" ]] || fail "the restarted shard logged no restored table"
echo "$restored"

echo "== the journal's priorities"
# The restore line is a warning (updates after the checkpoint are lost);
# the "serving on port" line is info and must not be filed as a warning.
warnings=$(inside journalctl -u ps-server@0 -p warning -o cat --no-pager)
[[ "$warnings" == *"restored table"* ]] || fail "journalctl -p warning lacks the restore line"
[[ "$warnings" != *"serving on port"* ]] || fail "an info line was filed as a warning"
infos=$(inside journalctl -u ps-server@0 -p info..info -o cat --no-pager)
[[ "$infos" == *"serving on port"* ]] || fail "journalctl -p info lacks 'serving on port'"
echo "journal: restore line at warning, serving line at info: ok"

# --- 3. a worker through a shard restart ---------------------------------
echo "== a worker training through a restart of ps-server@0"
# A second run of ps-worker@0, long enough (300 steps: 5-6 s of training
# on an idle CPU, 3-4 times that on a loaded one) to be mid-job when shard 0
# is killed after its step 20 and to train on for seconds once systemd has
# restarted it. Its journal is told apart from the first run's by the
# unit's invocation id.
worker_steps=300
worker_env "$worker_steps"
job_start=$(date +%s.%N)
inside systemctl start ps-worker@0  # Type=exec: returns once ps_worker runs
invocation=$(inside systemctl show -p InvocationID --value ps-worker@0)
[[ -n "$invocation" ]] || fail "ps-worker@0 has no invocation id"
invocation_log() { inside journalctl "_SYSTEMD_INVOCATION_ID=$1" -o cat --no-pager; }
for _ in $(seq 1 300); do
  [[ $(invocation_log "$invocation") == *" step 20/$worker_steps "* ]] && break
  sleep 0.1
done
[[ $(invocation_log "$invocation") == *" step 20/$worker_steps "* ]] ||
  { invocation_log "$invocation" | tail -n 20; fail "ps-worker@0 logged no step 20 within 30 s"; }
[[ $(inside systemctl show -p ActiveState --value ps-worker@0) == active ]] ||
  fail "ps-worker@0 is not training when shard 0 is to be killed"
echo "worker at step 20 $(since "$job_start") s after its start"
kill_shard0 2
for _ in $(seq 1 600); do
  show=$(inside systemctl show -p ActiveState,SubState,Result,ExecMainStatus,NRestarts ps-worker@0 |
    tr '\n' ' ')
  [[ "$show" == *ActiveState=active* || "$show" == *ActiveState=activating* ]] || break
  [[ "$show" != *SubState=auto-restart* ]] || break  # it failed; systemd would run it again
  sleep 0.1
done
echo "ps-worker@0: $show ($(since "$killed") s after the kill)"
[[ "$show" == *ActiveState=inactive* && "$show" == *Result=success* &&
   "$show" == *ExecMainStatus=0* && "$show" == *NRestarts=0* ]] ||
  { invocation_log "$invocation" | tail -n 20; fail "ps-worker@0 did not end with success"; }
summary=""
for _ in $(seq 1 50); do  # the journal may file the last line after the exit
  summary=$(invocation_log "$invocation" | grep '^{' | tail -n 1 || true)
  [[ -n "$summary" ]] && break
  sleep 0.1
done
echo "worker summary (restart fields): $(echo "$summary" | grep -o '"steps":[0-9]*\|"shard_restarts[^]]*\]*' | tr '\n' ' ')"
[[ "$summary" == *"\"steps\":$worker_steps,"* ]] ||
  fail "ps-worker@0's summary does not count $worker_steps steps: $summary"
[[ "$summary" == *'"shard_restarts":1,"shard_restarts_by_shard":[1,0]'* ]] ||
  fail "ps-worker@0's summary does not say it rode through one restart of shard 0: $summary"
# The restarted process's own journal: it restored its checkpoint.
shard_invocation=$(inside systemctl show -p InvocationID --value ps-server@0)
restored=$(invocation_log "$shard_invocation" | grep 'restored table' || true)
[[ -n "$restored" ]] || fail "ps-server@0 logged no restored table after its second restart"
echo "$restored"
invocation_log "$invocation" | grep 'shard 0 restarted (incarnation' ||
  fail "ps-worker@0 logged no restart of shard 0"
[[ $(inside systemctl show -p NRestarts --value ps-server@1) == 0 ]] ||
  fail "ps-server@1 was restarted while shard 0 was"
echo "the worker rode through the restart; ps-server@1 never restarted"

# --- 4. watchdog, hardening, stop -----------------------------------------
echo "== the watchdog"
# WATCHDOG=1 comes every 10 s (half of WatchdogSec=20s): after 11 s its
# timestamp has moved, and the shard that was never killed never restarted.
wait_s=$(awk -v a="$watchdog_since" -v b="$(date +%s.%N)" 'BEGIN { w = 11 - (b - a); print (w > 0 ? w : 0) }')
sleep "$wait_s"
watchdog_now=$(inside systemctl show -p WatchdogTimestampMonotonic --value ps-server@1)
(( watchdog_now > watchdog_start )) ||
  fail "ps-server@1 sent no WATCHDOG=1 in 11 s ($watchdog_start -> $watchdog_now)"
[[ $(inside systemctl show -p NRestarts --value ps-server@1) == 0 ]] ||
  fail "ps-server@1 was restarted"
echo "ps-server@1 fed the watchdog (timestamp +$(( (watchdog_now - watchdog_start) / 1000000 )) s), no restart"

echo "== systemd-analyze security of the running shard unit"
exposure=$(inside systemd-analyze security --no-pager ps-server@0 |
  sed -n 's/.*Overall exposure level for ps-server@0.service: \([0-9.]*\).*/\1/p')
echo "exposure level: $exposure (at most 1.5)"
awk -v e="$exposure" 'BEGIN { exit !(e != "" && e <= 1.5) }' ||
  fail "ps-server@0's exposure level '$exposure' is above 1.5"

# The target is ordered after its shards, so its stop job ends before theirs
# (each takes a last checkpoint): wait for them.
inside systemctl stop taups-shards.target
for i in 0 1; do
  for _ in $(seq 1 300); do
    show=$(inside systemctl show -p ActiveState,Result,ExecMainStatus "ps-server@$i" | tr '\n' ' ')
    [[ "$show" == *ActiveState=deactivating* ]] || break
    sleep 0.1
  done
  [[ "$show" == *ActiveState=inactive* ]] ||
    fail "ps-server@$i did not stop with taups-shards.target: $show"
done
echo "taups-shards.target stopped both shards"
echo "systemd_package_test: ok"
