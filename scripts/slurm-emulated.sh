#!/bin/sh
# A cluster run under real Slurm with emulated nodes on this one machine (issue 25;
# ../shared/notes/cluster.md §5.3): munged, slurmctld and one slurmd per node from Debian's
# slurmd/slurmctld/slurm-client/munge (22.05), all under a temp folder with ports above 16000,
# then `srun -N NODES -n NODES acceval bench --model M --cluster DIR` and `acceval merge DIR`.
#
# Usage: scripts/slurm-emulated.sh [ACCEVAL] [NODES] [RUNS]
#   ACCEVAL  the binary (default target/release/acceval)
#   NODES    emulated nodes, one rank each (default 3)
#   RUNS     the cluster's samples in all (default 3000)
# Needs root (it starts the daemons; installs the packages when missing). Exit status: merge's
# (0 VALID, 1 INVALID), or 2 when Slurm could not be brought up. The emulated nodes share this
# machine's cores: the run proves the launcher, the shards and the arithmetic, not scaling.
set -eu

BIN="$(realpath "${1:-target/release/acceval}")"
NODES="${2:-3}"
RUNS="${3:-3000}"
MODEL="${MODEL:-lstm-load-forecast}"
[ -x "$BIN" ] || { echo "slurm-emulated: no binary $BIN (cargo build --release)" >&2; exit 2; }
[ "$(id -u)" = 0 ] || { echo "slurm-emulated: run as root (it starts munged, slurmctld, slurmd)" >&2; exit 2; }

if ! command -v slurmctld >/dev/null 2>&1 || ! command -v munged >/dev/null 2>&1 && ! [ -x /usr/sbin/munged ]; then
  echo "== installing slurmd slurmctld slurm-client munge"
  DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends slurmd slurmctld slurm-client munge >/dev/null \
    || { apt-get update >/dev/null && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends slurmd slurmctld slurm-client munge >/dev/null; }
fi

T="$(mktemp -d /tmp/acceval-slurm.XXXXXX)"
HOST="$(hostname)"
PIDS=""
cleanup() {
  for p in $PIDS; do kill "$p" 2>/dev/null || true; done
  for f in "$T"/*.pid; do [ -f "$f" ] && kill "$(cat "$f")" 2>/dev/null || true; done
  sleep 1
  for f in "$T"/*.pid; do [ -f "$f" ] && kill -9 "$(cat "$f")" 2>/dev/null || true; done
  rm -rf "$T"
}
trap cleanup EXIT INT TERM

chmod 755 "$T"
mkdir -p "$T/spool" "$T/log" "$T/tmp" "$T/state" "$T/munge" "$T/run"
# munged: its own socket and key under $T, so a system munged is left alone.
cp /etc/munge/munge.key "$T/munge/munge.key"
chown -R munge:munge "$T/munge"
chmod 700 "$T/munge"
runuser -u munge -- /usr/sbin/munged --socket="$T/munge/munge.socket" --key-file="$T/munge/munge.key" \
  --pid-file="$T/munge/munged.pid" --log-file="$T/munge/munged.log" --seed-file="$T/munge/seed" --force
echo "$(cat "$T/munge/munged.pid")" > "$T/munged.pid"

LAST=$((16900 + NODES))
cat > "$T/slurm.conf" <<EOF
ClusterName=acceval-test
SlurmctldHost=$HOST(127.0.0.1)
SlurmctldPort=16817
SlurmdPort=16818
SlurmUser=root
AuthType=auth/munge
AuthInfo=socket=$T/munge/munge.socket
CredType=cred/munge
StateSaveLocation=$T/state
SlurmctldPidFile=$T/slurmctld.pid
SlurmctldLogFile=$T/log/slurmctld.log
SlurmdSpoolDir=$T/spool/%n
SlurmdPidFile=$T/slurmd-%n.pid
SlurmdLogFile=$T/log/slurmd-%n.log
TmpFS=$T/tmp
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
ReturnToService=2
MpiDefault=none
NodeName=n[1-$NODES] NodeHostname=$HOST NodeAddr=127.0.0.1 Port=[16901-$LAST] CPUs=2 RealMemory=1000
PartitionName=debug Nodes=n[1-$NODES] Default=YES OverSubscribe=YES MaxTime=30
EOF
export SLURM_CONF="$T/slurm.conf"

slurmctld -f "$SLURM_CONF" -i
i=1
while [ "$i" -le "$NODES" ]; do
  slurmd -f "$SLURM_CONF" -N "n$i"
  i=$((i + 1))
done

# Until every node is idle (at most 60 s).
k=0
until [ "$(sinfo -h -o '%T %D' 2>/dev/null | awk '$1=="idle"{n+=$2} END{print n+0}')" = "$NODES" ]; do
  k=$((k + 1))
  if [ "$k" -gt 60 ]; then
    echo "slurm-emulated: the nodes did not come up:" >&2
    sinfo >&2 || true
    tail -n 20 "$T"/log/*.log >&2 || true
    exit 2
  fi
  sleep 1
done
sinfo

DIR="$T/cluster"
echo "== srun -N $NODES -n $NODES acceval bench --model $MODEL --cluster $DIR --runs $RUNS"
set +e
timeout 900 srun -N "$NODES" -n "$NODES" --overcommit -t 20 \
  "$BIN" bench --model "$MODEL" --cluster "$DIR" --runs "$RUNS"
RC=$?
set -e
echo "== srun exited $RC"
echo "== acceval merge $DIR"
set +e
"$BIN" merge "$DIR"
MERGE=$?
set -e
for f in "$DIR"/rank-*.json; do
  printf '%s: ' "$(basename "$f")"
  python3 -c "import json,sys; d=json.load(open(sys.argv[1])); print(d['launcher'], d['launcher_source'], 'node', d['node'], 'samples', d['samples'])" "$f" 2>/dev/null || echo "(unreadable)"
done
if [ -n "${KEEP:-}" ]; then
  cp -r "$DIR" "$KEEP"
  echo "kept the rank files and cluster.json in $KEEP"
fi
exit "$MERGE"
