#!/bin/bash
# Run a sharded skyloop sweep on Kubernetes and merge it (docs/cluster.md):
# apply the Indexed Job, wait until it has completed (or failed), then run
# the merge Job and print its output. Kubernetes has no dependencies
# between Jobs, so this script is the dependency.
#
#   deploy/k8s/run.sh
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)

# wait_job JOB: wait until the Job is Complete (0) or Failed (1).
wait_job() {
  while :; do
    state=$(kubectl get job "$1" -o jsonpath='{.status.conditions[?(@.status=="True")].type}')
    case "$state" in
      *Complete*) return 0 ;;
      *Failed*) return 1 ;;
    esac
    sleep 20
  done
}

kubectl apply -f "$here/sweep-job.yaml"
if ! wait_job skyloop-sweep; then
  echo "the sweep failed; the merge below names the runs that are missing and their shards" >&2
fi
kubectl delete job skyloop-merge --ignore-not-found
kubectl apply -f "$here/merge-job.yaml"
status=0
wait_job skyloop-merge || status=1
kubectl logs job/skyloop-merge
exit $status
