#!/bin/bash
# docker/entrypoint.sh ROLE: the mini-cluster's container entrypoint (no
# systemd). Starts munged, then runs ROLE in the foreground:
#   slurmctld   the controller            (service slurmctld)
#   slurmd      a compute node            (services c1, c2, c3)
#   anything else is exec'd as a command  (e.g. bash)
# PSPAWN_PROCTRACK and PSPAWN_TASKPLUGIN (set in docker/compose.yml) choose
# ProctrackType and TaskPlugin; every container gets the same values, so
# every node has the same slurm.conf.
set -euo pipefail

role=${1:-slurmd}
proctrack=${PSPAWN_PROCTRACK:-proctrack/cgroup}
taskplugin=${PSPAWN_TASKPLUGIN:-task/affinity}
say() { echo "[entrypoint $(hostname) $(date +%H:%M:%S)] $*"; }

# slurm.conf from its template (the same on every node).
sed -e "s|@PROCTRACK@|$proctrack|" -e "s|@TASKPLUGIN@|$taskplugin|" \
    /etc/slurm/slurm.conf.in > /etc/slurm/slurm.conf

# munge: one key for all nodes, made once when the image was built.
mkdir -p /run/munge /var/log/munge /var/lib/munge
chown munge:munge /run/munge /var/log/munge /var/lib/munge
chmod 0755 /run/munge
if ! pgrep -x munged >/dev/null; then
    runuser -u munge -- /usr/sbin/munged
fi
for _ in $(seq 50); do munge -n </dev/null | unmunge >/dev/null 2>&1 && break; sleep 0.1; done
munge -n </dev/null | unmunge >/dev/null || { say "munged is not working"; exit 1; }

mkdir -p /var/log/slurm /var/lib/slurm/slurmctld /var/lib/slurm/slurmd
chown slurm:slurm /var/log/slurm /var/lib/slurm /var/lib/slurm/slurmctld

case $role in
slurmctld)
    say "starting slurmctld ($proctrack, $taskplugin)"
    exec /usr/sbin/slurmctld -D -i
    ;;
slurmd)
    # Registering needs the controller; wait for it a while (slurmd would
    # also retry by itself, but its first attempts then log errors).
    for _ in $(seq 120); do
        (exec 3<>/dev/tcp/slurmctld/6817) 2>/dev/null && break
        sleep 0.5
    done
    say "starting slurmd ($proctrack, $taskplugin)"
    exec /usr/sbin/slurmd -D
    ;;
*)
    exec "$@"
    ;;
esac
