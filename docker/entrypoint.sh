#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
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
taskplugin=${PSPAWN_TASKPLUGIN:-task/cgroup,task/affinity}
jobacct=${PSPAWN_JOBACCT:-jobacct_gather/cgroup}
say() { echo "[entrypoint $(hostname) $(date +%H:%M:%S)] $*"; }

# MPI: mpi/pmix where this Slurm has it.  Debian sid's Slurm 26.05.5
# has none ("Remove pmix (Closes: #1149781)" in its changelog), and Open MPI
# 6 speaks PMIx only: there MPI programs start under mpirun, not srun.
mpidefault=none
if ls /usr/lib/*/slurm-wlm/mpi_pmix.so /usr/lib/slurm/mpi_pmix.so >/dev/null 2>&1; then mpidefault=pmix; fi

# Debian sid's openmpi-common 6.0.0~rc2 ships btl_tcp_if_include=lo in
# openmpi-mca-params.conf: MPI between nodes then fails at MPI_Init ("Unable
# to find reachable pairing between local and remote interfaces").  Open
# MPI's own default (every interface but loopback) it is, here.
if grep -q '^btl_tcp_if_include *= *lo *$' /etc/openmpi/openmpi-mca-params.conf 2>/dev/null; then
    sed -i 's/^btl_tcp_if_include *= *lo *$/# &  (commented out by docker\/entrypoint.sh: MPI between the nodes)/' \
        /etc/openmpi/openmpi-mca-params.conf
fi

# slurm.conf from its template (the same on every node).
sed -e "s|@PROCTRACK@|$proctrack|" -e "s|@TASKPLUGIN@|$taskplugin|" -e "s|@JOBACCT@|$jobacct|" \
    -e "s|@MPIDEFAULT@|$mpidefault|" \
    /etc/slurm/slurm.conf.in > /etc/slurm/slurm.conf
# PSPAWN_NAMESPACE=namespace/linux (Slurm >= 25.11): each job in its own
# mount and PID namespaces (docker/etc/namespace.yaml).
if [ -n "${PSPAWN_NAMESPACE:-}" ]; then
    printf 'NamespaceType=%s\n' "$PSPAWN_NAMESPACE" >> /etc/slurm/slurm.conf
    mkdir -p /var/lib/slurm/namespace
fi
# PSPAWN_JOBCONTAINER=job_container/tmpfs (its predecessor, Slurm < 25.11):
# each job in its own mount namespace, with a private /tmp and /dev/shm
# (PrologFlags=Contain is set already).
if [ -n "${PSPAWN_JOBCONTAINER:-}" ]; then
    printf 'JobContainerType=%s\n' "$PSPAWN_JOBCONTAINER" >> /etc/slurm/slurm.conf
    printf 'AutoBasePath=true\nBasePath=/var/lib/slurm/jobtmp\n' > /etc/slurm/job_container.conf
fi

# plugstack.conf names the pspawn SPANK plugin as `optional`, but Slurm
# still prints two dlopen errors on every srun while the file is missing;
# until it is installed, keep the line commented out (same on every node).
plugin=$(awk '$1 == "optional" || $1 == "required" { print $2 }' /etc/slurm/plugstack.conf.in | head -n 1)
if [ -n "$plugin" ] && [ ! -e "$plugin" ]; then
    awk -v p="$plugin" '($1 == "optional" || $1 == "required") && $2 == p {
            print "# not installed in this image, so disabled by docker/entrypoint.sh:"; $0 = "# " $0 }
        { print }' /etc/slurm/plugstack.conf.in > /etc/slurm/plugstack.conf
elif [ "${PSPAWN_PLUGSTACK_MODE:-optional}" = required ]; then
    # required: a failing SPANK callback fails the job (the sid flavour:
    # Slurm >= 25.05 takes any non-zero return as a failure).
    sed -e 's/^optional /required /' /etc/slurm/plugstack.conf.in > /etc/slurm/plugstack.conf
else
    cp /etc/slurm/plugstack.conf.in /etc/slurm/plugstack.conf
fi

# munge: one key for all nodes, made once when the image was built.
mkdir -p /run/munge /var/log/munge /var/lib/munge
chown munge:munge /run/munge /var/log/munge /var/lib/munge
chmod 0755 /run/munge
if ! pgrep -x munged >/dev/null; then
    runuser -u munge -- /usr/sbin/munged
fi
for _ in $(seq 50); do munge -n </dev/null | unmunge >/dev/null 2>&1 && break; sleep 0.1; done
munge -n </dev/null | unmunge >/dev/null || { say "munged is not working"; exit 1; }

# sshd: mpirun with a host list and no Slurm allocation starts prted on
# the other nodes over ssh (users' keys are in the shared /home).
if [ -x /usr/sbin/sshd ] && ! pgrep -x sshd >/dev/null; then
    mkdir -p /run/sshd
    ssh-keygen -A >/dev/null 2>&1
    /usr/sbin/sshd -o PasswordAuthentication=no -o UseDNS=no || say "sshd did not start"
fi

mkdir -p /var/log/slurm /var/lib/slurm/slurmctld /var/lib/slurm/slurmd
chown slurm:slurm /var/log/slurm /var/lib/slurm /var/lib/slurm/slurmctld

case $role in
slurmctld)
    # Accounting (docker/accounting): MariaDB, slurmdbd, the test users.
    /usr/local/sbin/pspawn-accounting start || exit 1
    say "starting slurmctld ($proctrack, $taskplugin, $jobacct)"
    exec /usr/sbin/slurmctld -D -i
    ;;
slurmd)
    unshare_cgroup=()
    case "$proctrack,$taskplugin,$jobacct" in *cgroup*)
        # Docker (cgroup v1, not --privileged) bind-mounts this container's
        # own cgroup directory of every controller read-only on
        # /sys/fs/cgroup/<controller>; slurmd must create its slurm_<node>
        # hierarchy there. With CAP_SYS_ADMIN (compose.yml: cap_add) the
        # bind mounts can be made writable; they still show only this
        # container's subtree.
        failed=
        while read -r mnt opts; do
            case ",$opts," in *,ro,*)
                mount -o remount,bind,rw "$mnt" 2>/dev/null || failed="$failed $mnt" ;;
            esac
        done < <(findmnt -rn -t cgroup,cgroup2 -o TARGET,OPTIONS)
        if [ -n "$failed" ]; then
            say "cannot make$failed writable (needs CAP_SYS_ADMIN: cap_add SYS_ADMIN in compose.yml)."
            say "Use PSPAWN_PROCTRACK=proctrack/linuxproc PSPAWN_TASKPLUGIN=task/affinity instead."
            exit 1
        fi
        # A cgroup namespace rooted at this container's cgroup, so that
        # /proc/PID/cgroup paths match what is under /sys/fs/cgroup.
        if unshare --cgroup true 2>/dev/null; then unshare_cgroup=(unshare --cgroup); fi
        ;;
    esac
    # Registering needs the controller; wait for it a while (slurmd would
    # also retry by itself, but its first attempts then log errors).
    for _ in $(seq 120); do
        (exec 3<>/dev/tcp/slurmctld/6817) 2>/dev/null && break
        sleep 0.5
    done
    say "starting slurmd ($proctrack, $taskplugin)"
    exec "${unshare_cgroup[@]}" /usr/sbin/slurmd -D
    ;;
*)
    exec "$@"
    ;;
esac
