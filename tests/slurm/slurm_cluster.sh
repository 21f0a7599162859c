#!/bin/sh
# A real single-node SLURM cluster for the tests: munged, slurmctld and
# slurmd on this machine, every file in DIR (a generated slurm.conf, the
# munge key and socket, state, spool, logs), on free ports.
#   slurm_cluster.sh start DIR   starts it and waits until the node is idle;
#                                exit 77 (SKIPPED) with the reason when this
#                                machine cannot run the daemons (not
#                                installed: Debian slurm-wlm and munge; no
#                                root; a daemon that does not come up)
#   slurm_cluster.sh stop DIR    stops the daemons
# Then SLURM_CONF=DIR/slurm.conf points srun, sinfo and scancel at it.
set -u
action=$1 dir=$2
skip() { echo "SKIPPED: $*"; exit 77; }

stop() {
  for daemon in slurmd slurmctld munged; do
    [ -f "$dir/$daemon.pid" ] && kill "$(cat "$dir/$daemon.pid")" 2>/dev/null
  done
  sleep 1
  for daemon in slurmd slurmctld munged; do
    [ -f "$dir/$daemon.pid" ] && kill -9 "$(cat "$dir/$daemon.pid")" 2>/dev/null
    rm -f "$dir/$daemon.pid"
  done
  return 0
}

if [ "$action" = stop ]; then stop; exit 0; fi

for program in munged slurmctld slurmd srun sinfo; do
  command -v $program >/dev/null 2>&1 || skip "$program is not installed (Debian slurm-wlm, munge)"
done
[ "$(id -u)" -eq 0 ] || skip "the daemons of a one-node cluster need root here"
stop
rm -rf "$dir" && mkdir -p "$dir/state" "$dir/spool" && chmod 700 "$dir"
free_port() { /usr/bin/python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
host=$(hostname -s)
cpus=$(nproc)
dd if=/dev/urandom of="$dir/munge.key" bs=1024 count=1 2>/dev/null && chmod 400 "$dir/munge.key"
munged --force --key-file="$dir/munge.key" --socket="$dir/munge.socket" \
  --pid-file="$dir/munged.pid" --log-file="$dir/munged.log" --seed-file="$dir/munged.seed" \
  || skip "munged does not start: $(tail -1 "$dir/munged.log" 2>/dev/null)"
cat > "$dir/slurm.conf" <<CONF
ClusterName=deep500test
SlurmctldHost=$host(127.0.0.1)
SlurmctldPort=$(free_port)
SlurmdPort=$(free_port)
AuthType=auth/munge
AuthInfo=socket=$dir/munge.socket
CredType=cred/munge
SlurmUser=root
SlurmdUser=root
StateSaveLocation=$dir/state
SlurmdSpoolDir=$dir/spool
SlurmctldPidFile=$dir/slurmctld.pid
SlurmdPidFile=$dir/slurmd.pid
SlurmctldLogFile=$dir/slurmctld.log
SlurmdLogFile=$dir/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
SchedulerType=sched/builtin
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
MpiDefault=pmix
ReturnToService=2
NodeName=$host NodeAddr=127.0.0.1 CPUs=$cpus State=UNKNOWN
PartitionName=debug Nodes=ALL Default=YES MaxTime=INFINITE State=UP OverSubscribe=FORCE
CONF
export SLURM_CONF="$dir/slurm.conf"
slurmctld -f "$SLURM_CONF" || skip "slurmctld does not start: $(tail -1 "$dir/slurmctld.log" 2>/dev/null)"
slurmd -f "$SLURM_CONF" || skip "slurmd does not start: $(tail -1 "$dir/slurmd.log" 2>/dev/null)"
for i in $(seq 1 60); do
  state=$(sinfo -h -o %t 2>/dev/null | head -1)
  [ "$state" = idle ] && { echo "slurm: node $host idle ($cpus CPUs), SLURM_CONF=$SLURM_CONF"; exit 0; }
  sleep 0.5
done
reason="the node did not become idle (state '$state'): $(tail -2 "$dir/slurmd.log" 2>/dev/null | tr '\n' ' ')"
stop
skip "$reason"
