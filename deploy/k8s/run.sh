#!/bin/bash
# Run a sharded skyloop sweep on Kubernetes and merge it (docs/cluster.md):
# apply the claim and the Indexed Job, wait until the Job has completed (or
# failed), then run the merge Job and print its output. Kubernetes has no
# dependencies between Jobs, so this script is the dependency.
#
#   deploy/k8s/run.sh STORAGE_CLASS
#   deploy/k8s/run.sh nfs-client       # a class that provides ReadWriteMany volumes
#   deploy/k8s/run.sh none             # a PersistentVolume made beforehand, no class
#
# STORAGE_CLASS is required: the shards share one ReadWriteMany volume, which
# most clusters' default class cannot provide (kubectl get storageclass).
# A previous run's Jobs are deleted first (its results stay on the volume:
# running again runs only what is missing); a sweep Job that is still
# running is not touched: the script refuses and says how to stop it.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
usage="usage: run.sh STORAGE_CLASS (a class that provides ReadWriteMany volumes, see kubectl get storageclass; none: a PersistentVolume without a class)"
class=${1:-}
if [ -z "$class" ]; then
  echo "run.sh: no storage class given. $usage" >&2
  exit 2
fi
if ! [[ $class =~ ^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$ ]]; then
  echo "run.sh: '$class' is not a storage class name (lowercase letters, digits, '-' and '.'). $usage" >&2
  exit 2
fi
if [ "$class" = none ]; then
  class=
elif ! kubectl get storageclass "$class" >/dev/null; then
  echo "run.sh: the cluster has no storage class '$class' (kubectl get storageclass lists them). $usage" >&2
  exit 2
fi

# state JOB: the Job's conditions that hold ("" while it runs), or "absent".
state() {
  if [ -z "$(kubectl get job "$1" --ignore-not-found -o name)" ]; then
    echo absent
  else
    kubectl get job "$1" -o jsonpath='{.status.conditions[?(@.status=="True")].type}'
  fi
}

# A previous run's Jobs: finished ones are deleted (with their pods); a
# running sweep is left alone.
case "$(state skyloop-sweep)" in
  absent) ;;
  *Complete* | *Failed*) kubectl delete job skyloop-sweep --cascade=foreground --wait=true ;;
  *)
    echo "run.sh: the Job skyloop-sweep of an earlier run is still running (kubectl get job skyloop-sweep):" \
      "wait until it ends, or stop it with kubectl delete job skyloop-sweep, then run this again" \
      "(finished runs stay on the volume)" >&2
    exit 1
    ;;
esac
kubectl delete job skyloop-merge --ignore-not-found --cascade=foreground --wait=true

# wait_job JOB: wait until the Job is Complete (0) or Failed (1), saying
# once if the claim is not bound while it waits.
wait_job() {
  local said=
  while :; do
    case "$(state "$1")" in
      *Complete*) return 0 ;;
      *Failed*) return 1 ;;
      absent) echo "run.sh: the Job $1 has gone (deleted?)" >&2; return 1 ;;
    esac
    if [ -z "$said" ] && [ "$(kubectl get pvc skyloop-runs -o jsonpath='{.status.phase}')" != Bound ]; then
      echo "run.sh: waiting for $1; the claim skyloop-runs is not bound yet (kubectl describe pvc skyloop-runs:" \
        "a class that cannot provide ReadWriteMany volumes leaves it Pending)" >&2
      said=1
    fi
    sleep 20
  done
}

sed "s/^\( *storageClassName:\) SET-A-READWRITEMANY-CLASS\$/\1 \"$class\"/" "$here/sweep-job.yaml" | kubectl apply -f -
if ! wait_job skyloop-sweep; then
  echo "the sweep failed; the merge below names the runs that are missing and their shards" >&2
fi
kubectl apply -f "$here/merge-job.yaml"
status=0
wait_job skyloop-merge || status=1
kubectl logs job/skyloop-merge
exit $status
