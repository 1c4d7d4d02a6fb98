#!/bin/bash
# Submit a sharded skyloop sweep to Slurm: N array tasks (one shard each)
# and the merge, which starts when all of them have ended (docs/cluster.md).
#
#   deploy/slurm/submit.sh N [EXPERIMENT [OUT]]
#   deploy/slurm/submit.sh 16 netbots /scratch/$USER/runs
#
# SWEEP_ARGS and SKYLOOP are passed on (see sweep.sbatch).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
n=${1:?usage: submit.sh N [EXPERIMENT [OUT]]}
export EXPERIMENT=${2:-${EXPERIMENT:-netbots/delay}}
export OUT=${3:-${OUT:-$HOME/skyloop-runs}}
mkdir -p "$OUT"
array=$(sbatch --parsable --export=ALL --array="0-$((n - 1))" "$here/sweep.sbatch")
array=${array%%;*} # "jobid;cluster" on federated clusters
# afterany: the merge also runs when a shard failed, to name what is missing.
merge=$(sbatch --parsable --export=ALL --dependency="afterany:$array" "$here/merge.sbatch")
echo "shards: job $array (array 0-$((n - 1))), merge: job ${merge%%;*}; results in $OUT"
