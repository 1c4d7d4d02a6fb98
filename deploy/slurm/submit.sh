#!/bin/bash
# Submit a sharded skyloop sweep to Slurm: N array tasks (one shard each)
# and the merge, which starts when all of them have ended (docs/cluster.md).
#
#   deploy/slurm/submit.sh N [EXPERIMENT [OUT]]
#   deploy/slurm/submit.sh 16 netbots /scratch/$USER/runs
#
# It exports SHARDS=N (sweep.sbatch needs it) and passes on SWEEP_ARGS and
# SKYLOOP (see sweep.sbatch). CPUS_PER_TASK overrides sweep.sbatch's
# --cpus-per-task. Before submitting it checks the request against the
# nodes, because Slurm keeps a task that no node can run pending for ever,
# without a message: when the largest node (sinfo; of SBATCH_PARTITION if
# set) has fewer CPUs than a task asks for, each task asks for that node's
# CPUs instead, and says so; then `sbatch --test-only` must accept both
# jobs, or nothing is submitted and Slurm's reason is printed. At the end it
# prints the commands that run one shard again and the merge.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
usage="usage: submit.sh N [EXPERIMENT [OUT]]"
n=${1:?$usage}
if ! [[ $n =~ ^[1-9][0-9]*$ ]]; then
  echo "submit.sh: N is '$n': want the number of shards, 1 or more ($usage)" >&2
  exit 2
fi
export SHARDS=$n
export EXPERIMENT=${2:-${EXPERIMENT:-netbots/delay}}
export OUT=${3:-${OUT:-$HOME/skyloop-runs}}

# CPUs per task: CPUS_PER_TASK, or sweep.sbatch's #SBATCH --cpus-per-task.
cpus=${CPUS_PER_TASK:-$(sed -n 's/^#SBATCH --cpus-per-task=\([0-9]*\)[[:space:]]*$/\1/p' "$here/sweep.sbatch")}
if ! [[ $cpus =~ ^[1-9][0-9]*$ ]]; then
  echo "submit.sh: '$cpus' CPUs per task (CPUS_PER_TASK, or the #SBATCH --cpus-per-task line of sweep.sbatch): want a number, 1 or more" >&2
  exit 2
fi
part=${SBATCH_PARTITION:+ of partition $SBATCH_PARTITION}
if most=$(sinfo -h -N -o %c ${SBATCH_PARTITION:+-p "$SBATCH_PARTITION"} 2>/dev/null | sort -n | tail -1) &&
  [[ $most =~ ^[1-9][0-9]*$ ]]; then
  if [ "$cpus" -gt "$most" ]; then
    echo "submit.sh: a task asks for $cpus CPUs, but the largest node$part has $most (sinfo), so Slurm would" \
      "keep the tasks pending for ever: asking for $most CPUs per task instead (CPUS_PER_TASK chooses)" >&2
    cpus=$most
  fi
else
  echo "submit.sh: sinfo did not tell the nodes' CPUs$part; asking for $cpus CPUs per task" >&2
fi

opts=(--export=ALL --cpus-per-task="$cpus")
for job in "sweep.sbatch ${opts[*]} --array=0-$((n - 1))" "merge.sbatch --export=ALL"; do
  read -r -a a <<< "$job"
  if ! why=$(sbatch --test-only "${a[@]:1}" "$here/${a[0]}" 2>&1); then
    echo "submit.sh: Slurm would never start $job: $why" >&2
    echo "submit.sh: adjust the #SBATCH lines of ${a[0]} (CPUs, memory, time, partition) to the nodes (sinfo -N -l); nothing was submitted" >&2
    exit 1
  fi
done

mkdir -p "$OUT"
array=$(sbatch --parsable "${opts[@]}" --array="0-$((n - 1))" "$here/sweep.sbatch")
array=${array%%;*} # "jobid;cluster" on federated clusters
# afterany: the merge also runs when a shard failed, to name what is missing.
merge=$(sbatch --parsable --export=ALL --dependency="afterany:$array" "$here/merge.sbatch")
merge=${merge%%;*}
echo "shards: job $array (array 0-$((n - 1)), $cpus CPUs per task), merge: job $merge; results in $OUT"

# The commands that run shard K again (it continues where it stopped) and
# then the merge, in this environment.
vars() {
  local v s=
  for v in "$@"; do
    if [ -n "${!v:-}" ]; then s+="$v=$(printf %q "${!v}") "; fi
  done
  printf %s "$s"
}
echo "to run shard K again: $(vars SHARDS EXPERIMENT OUT SWEEP_ARGS SKYLOOP)sbatch ${opts[*]} --array=K $(printf %q "$here/sweep.sbatch")"
echo "then merge again:     $(vars OUT SKYLOOP)sbatch --export=ALL $(printf %q "$here/merge.sbatch")"
