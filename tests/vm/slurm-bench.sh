#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# tests/vm/slurm-bench.sh DIR - in the cgroup v2 guest, after the checks:
# bench/vm-srun's smoke timing of the programs it built (DIR/*/pynamic,
# DIR/*/trivial, built for /home/alice/bench): one step of 2 nodes x 4
# tasks each, plain, --pspawn and reuse=job (every step but the first of
# one allocation), interleaved, 5 of each, medians, as "# bench:" lines.
# Under QEMU's emulator fork, faults and relocation slow down by
# different factors: this shows that each way works there, not its speed.
src=${1:?usage: slurm-bench.sh DIR}
ax() { runuser -u alice -- bash -c "cd /home/alice && $1"; }
settled() {
    for _ in $(seq 100); do
        sinfo -h -N -o %T | grep -qvx idle || return 0
        sleep 0.3
    done
}
rm -rf /home/alice/bench && cp -a "$src" /home/alice/bench && chown -R alice:alice /home/alice/bench
out=$(mktemp)
# The nodes have 2 CPUs each: -O places 8 tasks on them all the same (4
# on each, block distribution), given memory for them; Slurm 24.11 refuses
# --ntasks-per-node=4 there even with -O.
args="-N2 -n8 -O"
for prog in $(cd /home/alice/bench && ls -d */pynamic */trivial 2>/dev/null); do
    settled
    ax "salloc $args --mem=600M bash -c '
        srun $args hostname | sort | uniq -c | sed \"s/^/tasks per node: /\"
        step() { s=\$(date +%s%N); srun \$1 $args /home/alice/bench/$prog >/dev/null 2>&1 || { echo fail; return; }; e=\$(date +%s%N); echo \$(( (e - s) / 1000000 )); }
        step \"\" >/dev/null; step --pspawn=on,reuse=job >/dev/null
        for r in 1 2 3 4 5; do echo plain \$(step \"\"); echo pspawn \$(step --pspawn); echo job \$(step --pspawn=on,reuse=job); done'" \
        >"$out" 2>&1
    med() { awk -v m="$1" '$1 == m && $2 ~ /^[0-9]+$/ { print $2 }' "$out" | sort -n | awk '{ a[NR] = $1 } END { print a[int((NR + 1) / 2)] }'; }
    if grep -qE '^(plain|pspawn|job) fail|error' "$out" || [ -z "$(med plain)" ]; then
        echo "# bench: $prog: a step FAILED:"; head -n 5 "$out" | sed 's/^/#   /'
    else
        echo "# bench: $prog, srun $args ($(awk '$1 == "tasks" && $2 == "per" { printf "%s%s:%s", n++ ? " " : "", $5, $4 }' "$out")), median of 5: plain $(med plain) ms, --pspawn $(med pspawn) ms, reuse=job $(med job) ms"
    fi
done
rm -f "$out"
