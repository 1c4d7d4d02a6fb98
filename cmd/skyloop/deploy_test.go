package main

import (
	"context"
	"crypto/rand"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"skyloop/internal/short"
	"skyloop/netsim/ns3"
	"skyloop/scenario"
	"skyloop/scenarios"
	"skyloop/vehicle/mujoco/mjlib"
)

// The cluster recipes in deploy/ (docs/cluster.md) are checked here: their
// fields parsed strictly, and the commands they run executed as the
// cluster would, with this test binary as skyloop.

const deployDir = "../../deploy"

func readDeploy(t *testing.T, name string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(deployDir, name))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// skyloopOnPath returns the environment to run recipes in: a skyloop
// command that runs this test binary as the CLI first on PATH, after the
// directories in first.
func skyloopOnPath(t *testing.T, first ...string) []string {
	t.Helper()
	bin := t.TempDir()
	script := fmt.Sprintf("#!/bin/sh\nSKYLOOP_CLI_CHILD=1 exec %q \"$@\"\n", os.Args[0])
	if err := os.WriteFile(filepath.Join(bin, "skyloop"), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	path := strings.Join(append(first, bin, os.Getenv("PATH")), string(os.PathListSeparator))
	return append(os.Environ(), "PATH="+path)
}

// unshardedSummary runs the sweep whole (in this process) and returns its
// summary.csv.
func unshardedSummary(t *testing.T, args ...string) string {
	t.Helper()
	out := t.TempDir()
	code, _, stderr := capture(t, append(append([]string{"sweep"}, args...), "--out", out, "-q")...)
	if code != 0 {
		t.Fatalf("unsharded sweep %v: exit %d: %s", args, code, stderr)
	}
	m, _ := filepath.Glob(filepath.Join(out, "*", "summary.csv"))
	if len(m) != 1 {
		t.Fatalf("unsharded sweep wrote %v", m)
	}
	b, _ := os.ReadFile(m[0])
	return string(b)
}

// fakeSbatch stands in for Slurm's sbatch: it logs its arguments
// (--test-only calls apart), runs an array job's tasks at once with the
// variables Slurm sets (SLURM_ARRAY_TASK_COUNT is the count of the tasks
// submitted: 1 for --array=2, as Slurm says), then any other job, writes
// each job's output where its #SBATCH --output line says, records each
// job's exit status in $SBATCH_OUT/states and prints the job id as sbatch
// does. --test-only fails with $FAKE_SBATCH_REFUSE when that is set.
const fakeSbatch = `#!/bin/bash
set -u
array= script= test_only= parsable= cpus=1
for a in "$@"; do
  case "$a" in
    --array=*) array=${a#--array=} ;;
    --cpus-per-task=*) cpus=${a#--cpus-per-task=} ;;
    --test-only) test_only=1 ;;
    --parsable) parsable=1 ;;
    -*) ;;
    *) script=$a ;;
  esac
done
if [ -n "$test_only" ]; then
  echo "$*" >> "$SBATCH_LOG.test-only"
  if [ -n "${FAKE_SBATCH_REFUSE:-}" ]; then echo "allocation failure: $FAKE_SBATCH_REFUSE" >&2; exit 1; fi
  echo "sbatch: Job 1 to start at now" >&2
  exit 0
fi
echo "$*" >> "$SBATCH_LOG"
id=$((1000 + $(wc -l < "$SBATCH_LOG")))
output=$(sed -n 's/^#SBATCH --output=//p' "$script")
output=${output//%A/$id}
output=${output//%j/$id}
if [ -n "$array" ]; then
  lo=${array%-*} hi=${array#*-} pids=() tasks=()
  for ((k = lo; k <= hi; k++)); do
    SLURM_ARRAY_JOB_ID=$id SLURM_ARRAY_TASK_ID=$k SLURM_ARRAY_TASK_COUNT=$((hi - lo + 1)) \
      SLURM_ARRAY_TASK_MIN=$lo SLURM_ARRAY_TASK_MAX=$hi SLURM_CPUS_PER_TASK=$cpus \
      bash "$script" > "${output//%a/$k}" 2>&1 &
    pids+=($!) tasks+=($k)
  done
  for i in "${!pids[@]}"; do wait "${pids[$i]}"; echo "${id}_${tasks[$i]} $?" >> "$SBATCH_OUT/states"; done
else
  SLURM_JOB_ID=$id bash "$script" > "$output" 2>&1
  echo "$id $?" >> "$SBATCH_OUT/states"
fi
if [ -n "$parsable" ]; then echo "$id"; else echo "Submitted batch job $id"; fi
`

// fakeSinfo stands in for sinfo -h -N -o %c: the CPUs of each node,
// $FAKE_SINFO_CPUS.
const fakeSinfo = `#!/bin/sh
[ -n "${FAKE_SINFO_CPUS:-}" ] || exit 1
printf '%s\n' $FAKE_SINFO_CPUS
`

// slurmCluster is where checkSlurmRecipe submits: the stand-in sbatch or a
// real Slurm.
type slurmCluster struct {
	// env is the environment of submit.sh and of the commands it prints.
	env []string
	// dir is sbatch's working directory, where the jobs' output files go.
	dir string
	// wait returns once every job submitted so far has ended.
	wait func(t *testing.T)
	// state returns the state of a job ("COMPLETED", "FAILED"), or of the
	// task of an array job when task >= 0.
	state func(t *testing.T, job string, task int) string
}

// checkSlurmRecipe runs deploy/slurm as its documentation says, on a
// cluster whose largest node has 2 CPUs: submit.sh with sweep.sbatch's
// --cpus-per-task=4 (lowered to 2, with a message, or the tasks would pend
// for ever), 3 shards of which shard 2 fails once (a lost node): the merge
// fails naming it; then shard 2 alone run again with the command submit.sh
// printed (`sbatch --array=2`, SHARDS=3), and the merge again: the
// summary.csv is the unsharded sweep's.
func checkSlurmRecipe(t *testing.T, c slurmCluster) {
	slurm, err := filepath.Abs(filepath.Join(deployDir, "slurm"))
	if err != nil {
		t.Fatal(err)
	}
	exp := writeShardExperiment(t, 4, "10s")
	out := filepath.Join(t.TempDir(), "runs")
	tmp := t.TempDir()
	marker := filepath.Join(tmp, "fail-once")
	flaky := filepath.Join(tmp, "flaky-skyloop")
	if err := os.WriteFile(marker, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	script := fmt.Sprintf("#!/bin/sh\ncase \" $* \" in *\" --shard 2/3 \"*)\n"+
		"  if rm %q 2>/dev/null; then echo 'flaky-skyloop: shard 2/3 fails this once (a lost node)' >&2; exit 1; fi ;;\nesac\n"+
		"exec skyloop \"$@\"\n", marker)
	if err := os.WriteFile(flaky, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	env := append(slices.Clone(c.env), "SWEEP_ARGS=--seeds 3", "SKYLOOP="+flaky)
	run := func(what string, args ...string) (string, string) {
		t.Helper()
		cmd := exec.Command(args[0], args[1:]...)
		cmd.Env, cmd.Dir = env, c.dir
		var stdout, stderr strings.Builder
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		if err := cmd.Run(); err != nil {
			t.Fatalf("%s: %v\n%s%s", what, err, stdout.String(), stderr.String())
		}
		return stdout.String(), stderr.String()
	}
	output := func(name string) string {
		t.Helper()
		b, err := os.ReadFile(filepath.Join(c.dir, name))
		if err != nil {
			t.Errorf("the job's output: %v", err)
		}
		return string(b)
	}
	wantState := func(job string, task int, want string) {
		t.Helper()
		if got := c.state(t, job, task); got != want {
			t.Errorf("job %s task %d is %s, want %s", job, task, got, want)
		}
	}

	stdout, stderr := run("submit.sh", "bash", filepath.Join(slurm, "submit.sh"), "3", exp, out)
	if !strings.Contains(stderr, "asking for 2 CPUs per task instead") {
		t.Errorf("submit.sh on nodes of at most 2 CPUs did not say it asks for 2 CPUs instead of 4:\n%s", stderr)
	}
	ids := regexp.MustCompile(`shards: job (\d+) .*merge: job (\d+)`).FindStringSubmatch(stdout)
	if ids == nil {
		t.Fatalf("submit.sh printed no job ids:\n%s", stdout)
	}
	array, merge := ids[1], ids[2]
	c.wait(t)
	for k := 0; k < 2; k++ {
		if task := output(fmt.Sprintf("skyloop-sweep-%s_%d.out", array, k)); !strings.Contains(task, fmt.Sprintf("shardy shard %d/3: ", k)) {
			t.Errorf("array task %d printed:\n%s", k, task)
		}
		wantState(array, k, "COMPLETED")
	}
	if task := output(fmt.Sprintf("skyloop-sweep-%s_2.out", array)); !strings.Contains(task, "fails this once") {
		t.Errorf("array task 2 printed:\n%s", task)
	}
	wantState(array, 2, "FAILED")
	if m := output("skyloop-merge-" + merge + ".out"); !strings.Contains(m, "nothing was merged") || !strings.Contains(m, "shard 2/3") {
		t.Errorf("the merge after a failed shard did not name shard 2/3:\n%s", m)
	}
	wantState(merge, -1, "FAILED")
	if _, err := os.Stat(filepath.Join(out, "shardy", "summary.csv")); err == nil {
		t.Fatalf("a summary.csv was written with shard 2 missing")
	}

	// Shard 2 again, as the documentation and submit.sh say.
	rerun := regexp.MustCompile(`(?m)^to run shard K again: (.*--array=K.*)$`).FindStringSubmatch(stdout)
	remerge := regexp.MustCompile(`(?m)^then merge again: +(.*)$`).FindStringSubmatch(stdout)
	if rerun == nil || remerge == nil {
		t.Errorf("submit.sh printed no commands to run a shard and the merge again:\n%s", stdout)
		// The documented command, in the sweep's environment.
		rerun = []string{"", fmt.Sprintf("SHARDS=3 EXPERIMENT=%q OUT=%q sbatch --array=K %q", exp, out, filepath.Join(slurm, "sweep.sbatch"))}
		remerge = []string{"", fmt.Sprintf("OUT=%q sbatch %q", out, filepath.Join(slurm, "merge.sbatch"))}
	}
	submitted := regexp.MustCompile(`Submitted batch job (\d+)`)
	o, _ := run("running shard 2 again", "bash", "-c", strings.Replace(rerun[1], "--array=K", "--array=2", 1))
	job := submitted.FindStringSubmatch(o)
	if job == nil {
		t.Fatalf("sbatch printed %q", o)
	}
	c.wait(t)
	if task := output(fmt.Sprintf("skyloop-sweep-%s_2.out", job[1])); !strings.Contains(task, "shardy shard 2/3: ") {
		t.Errorf("shard 2 run again (%s) printed:\n%s", rerun[1], task)
	}
	wantState(job[1], 2, "COMPLETED")
	o, _ = run("merging again", "bash", "-c", remerge[1])
	if job = submitted.FindStringSubmatch(o); job == nil {
		t.Fatalf("sbatch printed %q", o)
	}
	c.wait(t)
	wantState(job[1], -1, "COMPLETED")
	got, err := os.ReadFile(filepath.Join(out, "shardy", "summary.csv"))
	if err != nil {
		t.Fatalf("the merge wrote no summary.csv: %v\n%s", err, output("skyloop-merge-"+job[1]+".out"))
	}
	if string(got) != unshardedSummary(t, exp, "--seeds", "3") {
		t.Errorf("summary.csv of the Slurm recipe differs from the unsharded sweep's")
	}
}

// TestSlurmRecipe checks deploy/slurm with a stand-in sbatch and sinfo
// (the same recipe on a real Slurm: TestSlurmRecipeOnRealSlurm): the
// scripts' syntax and the --shard expression; the whole sequence of
// checkSlurmRecipe and the sbatch calls submit.sh makes (checked with
// --test-only first, the CPUs lowered to the largest node's); a task with
// no SHARDS refused before it runs anything (Slurm's count of the tasks
// would make --array=0 run the whole sweep as shard 0/1); and a request
// Slurm would never start refused with Slurm's reason, nothing submitted.
func TestSlurmRecipe(t *testing.T) {
	sweepScript := readDeploy(t, "slurm/sweep.sbatch")
	if !strings.Contains(sweepScript, `--shard "$SLURM_ARRAY_TASK_ID/$SHARDS"`) || strings.Contains(sweepScript, "$SLURM_ARRAY_TASK_COUNT") {
		t.Errorf("sweep.sbatch does not run --shard \"$SLURM_ARRAY_TASK_ID/$SHARDS\" (N from SHARDS, not from Slurm's task count)")
	}
	for _, f := range []string{"sweep.sbatch", "merge.sbatch", "submit.sh"} {
		if b, err := exec.Command("bash", "-n", filepath.Join(deployDir, "slurm", f)).CombinedOutput(); err != nil {
			t.Errorf("%s: %v\n%s", f, err, b)
		}
	}
	if !strings.Contains(readDeploy(t, "slurm/merge.sbatch"), `sweep merge "$OUT"`) {
		t.Errorf("merge.sbatch does not run skyloop sweep merge \"$OUT\"")
	}

	fake := t.TempDir()
	for name, text := range map[string]string{"sbatch": fakeSbatch, "sinfo": fakeSinfo} {
		if err := os.WriteFile(filepath.Join(fake, name), []byte(text), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	logs := t.TempDir()
	sbatchLog := filepath.Join(logs, "sbatch.log")
	env := append(skyloopOnPath(t, fake), "SBATCH_LOG="+sbatchLog, "SBATCH_OUT="+logs,
		"FAKE_SINFO_CPUS=1 2", "HOME="+t.TempDir())
	checkSlurmRecipe(t, slurmCluster{
		env:  env,
		dir:  t.TempDir(),
		wait: func(*testing.T) {}, // the stand-in runs the jobs before it returns
		state: func(t *testing.T, job string, task int) string {
			b, _ := os.ReadFile(filepath.Join(logs, "states"))
			key := job
			if task >= 0 {
				key = fmt.Sprintf("%s_%d", job, task)
			}
			for _, l := range strings.Split(string(b), "\n") {
				if f := strings.Fields(l); len(f) == 2 && f[0] == key {
					return map[bool]string{true: "COMPLETED", false: "FAILED"}[f[1] == "0"]
				}
			}
			return "unknown"
		},
	})
	calls, _ := os.ReadFile(sbatchLog)
	lines := strings.Split(strings.TrimSpace(string(calls)), "\n")
	if len(lines) < 2 || !strings.Contains(lines[0], "--array=0-2") || !strings.Contains(lines[0], "--cpus-per-task=2 ") ||
		!strings.HasSuffix(lines[0], "/sweep.sbatch") ||
		!strings.Contains(lines[1], "--dependency=afterany:1001 ") || !strings.HasSuffix(lines[1], "/merge.sbatch") {
		t.Errorf("submit.sh called sbatch with:\n%s\nwant the array 0-2 of sweep.sbatch with 2 CPUs per task, then merge.sbatch after it", calls)
	}
	if tests, _ := os.ReadFile(sbatchLog + ".test-only"); strings.Count(string(tests), "\n") != 2 {
		t.Errorf("submit.sh checked with sbatch --test-only:\n%s\nwant the array and the merge checked", tests)
	}

	// A task without SHARDS (or with a count that is not N) runs nothing.
	out := t.TempDir()
	for _, shards := range []string{"", "x", "2"} {
		cmd := exec.Command("bash", filepath.Join(deployDir, "slurm", "sweep.sbatch"))
		cmd.Env = append(skyloopOnPath(t), "SLURM_ARRAY_TASK_ID=2", "SLURM_ARRAY_TASK_COUNT=1", "SHARDS="+shards,
			"OUT="+out, "EXPERIMENT="+writeShardExperiment(t, 1, "10s"))
		b, err := cmd.CombinedOutput()
		if err == nil || !strings.Contains(string(b), "SHARDS") {
			t.Errorf("sweep.sbatch as array task 2 with SHARDS=%q: %v\n%s\nwant a refusal naming SHARDS", shards, err, b)
		}
	}
	if m, _ := filepath.Glob(filepath.Join(out, "*", "shard-*.json")); len(m) > 0 {
		t.Errorf("sweep.sbatch without a valid SHARDS ran shards: %v", m)
	}

	// A request that Slurm would never start: nothing submitted.
	os.Remove(sbatchLog)
	cmd := exec.Command("bash", filepath.Join(deployDir, "slurm", "submit.sh"), "2", "netbots/delay", t.TempDir())
	cmd.Env = append(slices.Clone(env), "FAKE_SBATCH_REFUSE=Requested node configuration is not available")
	b, err := cmd.CombinedOutput()
	if err == nil || !strings.Contains(string(b), "Requested node configuration is not available") || !strings.Contains(string(b), "nothing was submitted") {
		t.Errorf("submit.sh with a request Slurm refuses: %v\n%s\nwant a failure with Slurm's reason", err, b)
	}
	if _, err := os.Stat(sbatchLog); err == nil {
		t.Errorf("submit.sh submitted jobs that Slurm would never start")
	}
}

// Kubernetes objects, as far as the recipes use them: decoded strictly, so
// a misspelled or misplaced field fails.
type (
	k8sMeta struct {
		Name   string            `yaml:"name"`
		Labels map[string]string `yaml:"labels"`
	}
	k8sResources struct {
		Requests map[string]string `yaml:"requests"`
		Limits   map[string]string `yaml:"limits"`
	}
	k8sContainer struct {
		Name            string `yaml:"name"`
		Image           string `yaml:"image"`
		ImagePullPolicy string `yaml:"imagePullPolicy"`
		Env             []struct {
			Name  string `yaml:"name"`
			Value string `yaml:"value"`
		} `yaml:"env"`
		Command      []string     `yaml:"command"`
		Args         []string     `yaml:"args"`
		Resources    k8sResources `yaml:"resources"`
		VolumeMounts []struct {
			Name      string `yaml:"name"`
			MountPath string `yaml:"mountPath"`
		} `yaml:"volumeMounts"`
	}
	k8sVolume struct {
		Name                  string `yaml:"name"`
		PersistentVolumeClaim struct {
			ClaimName string `yaml:"claimName"`
		} `yaml:"persistentVolumeClaim"`
	}
	k8sObject struct {
		APIVersion string  `yaml:"apiVersion"`
		Kind       string  `yaml:"kind"`
		Metadata   k8sMeta `yaml:"metadata"`
		Spec       struct {
			// PersistentVolumeClaim
			AccessModes      []string     `yaml:"accessModes"`
			StorageClassName *string      `yaml:"storageClassName"`
			Resources        k8sResources `yaml:"resources"`
			// Job
			CompletionMode       string `yaml:"completionMode"`
			Completions          int    `yaml:"completions"`
			Parallelism          int    `yaml:"parallelism"`
			BackoffLimit         *int   `yaml:"backoffLimit"`
			BackoffLimitPerIndex *int   `yaml:"backoffLimitPerIndex"`
			PodFailurePolicy     struct {
				Rules []struct {
					Action          string `yaml:"action"`
					OnPodConditions []struct {
						Type string `yaml:"type"`
					} `yaml:"onPodConditions"`
				} `yaml:"rules"`
			} `yaml:"podFailurePolicy"`
			Template struct {
				Metadata k8sMeta `yaml:"metadata"`
				Spec     struct {
					RestartPolicy string         `yaml:"restartPolicy"`
					Containers    []k8sContainer `yaml:"containers"`
					Volumes       []k8sVolume    `yaml:"volumes"`
				} `yaml:"spec"`
			} `yaml:"template"`
		} `yaml:"spec"`
	}
)

// readK8s decodes the objects of a manifest in deploy/.
func readK8s(t *testing.T, name string) []k8sObject {
	t.Helper()
	return parseK8s(t, name, readDeploy(t, name))
}

// parseK8s decodes the objects of a manifest (documents separated by ---).
func parseK8s(t *testing.T, name, text string) []k8sObject {
	t.Helper()
	var objs []k8sObject
	for i, doc := range regexp.MustCompile(`(?m)^---$`).Split(text, -1) {
		if strings.TrimSpace(regexp.MustCompile(`(?m)^\s*#.*$`).ReplaceAllString(doc, "")) == "" {
			continue
		}
		d, err := scenario.ParseDocument(fmt.Sprintf("%s (document %d)", name, i+1), []byte(doc))
		if err != nil {
			t.Fatal(err)
		}
		var o k8sObject
		d.Decode(d.Root, "", &o)
		if err := d.Err(); err != nil {
			t.Fatal(err)
		}
		objs = append(objs, o)
	}
	return objs
}

// checkJobPod checks a Job's pod: one container whose mounts are volumes
// of the pod, on the claim, and returns the container and its mount path.
func checkJobPod(t *testing.T, job k8sObject, claim string) (k8sContainer, string) {
	t.Helper()
	if job.APIVersion != "batch/v1" || job.Kind != "Job" {
		t.Fatalf("%s: %s %s, want batch/v1 Job", job.Metadata.Name, job.APIVersion, job.Kind)
	}
	pod := job.Spec.Template.Spec
	if pod.RestartPolicy != "Never" && pod.RestartPolicy != "OnFailure" {
		t.Errorf("%s: restartPolicy %q: a Job needs Never or OnFailure", job.Metadata.Name, pod.RestartPolicy)
	}
	if len(pod.Containers) != 1 {
		t.Fatalf("%s: %d containers, want 1", job.Metadata.Name, len(pod.Containers))
	}
	c := pod.Containers[0]
	if len(c.VolumeMounts) != 1 {
		t.Fatalf("%s: %d volume mounts, want the results volume", job.Metadata.Name, len(c.VolumeMounts))
	}
	i := slices.IndexFunc(pod.Volumes, func(v k8sVolume) bool { return v.Name == c.VolumeMounts[0].Name })
	if i < 0 {
		t.Fatalf("%s: the mount %q is not a volume of the pod", job.Metadata.Name, c.VolumeMounts[0].Name)
	}
	if pod.Volumes[i].PersistentVolumeClaim.ClaimName != claim {
		t.Errorf("%s: volume %s is claim %q, want %q", job.Metadata.Name, pod.Volumes[i].Name, pod.Volumes[i].PersistentVolumeClaim.ClaimName, claim)
	}
	if len(c.Command) != 2 || c.Command[0] != "/bin/sh" || c.Command[1] != "-c" || len(c.Args) != 1 {
		t.Fatalf("%s: command %q args %q, want /bin/sh -c and one script", job.Metadata.Name, c.Command, c.Args)
	}
	return c, c.VolumeMounts[0].MountPath
}

// runPod runs a pod's shell script here: in env with the container's
// environment and then set (which wins) added, the volume's mount path
// replaced by dir.
func runPod(c k8sContainer, mount, dir string, env []string, set ...string) (string, error) {
	script := strings.ReplaceAll(c.Args[0], mount, dir)
	cmd := exec.Command("/bin/sh", "-c", script)
	cmd.Env = slices.Clone(env)
	for _, e := range c.Env {
		cmd.Env = append(cmd.Env, e.Name+"="+e.Value)
	}
	cmd.Env = append(cmd.Env, set...)
	b, err := cmd.CombinedOutput()
	return string(b), err
}

// TestKubernetesRecipe checks deploy/k8s: the Indexed Job (batch/v1,
// completionMode Indexed, completions = parallelism = SHARDS, the shard
// from JOB_COMPLETION_INDEX, its volume a ReadWriteMany claim) and the
// merge Job on the same claim; then runs every pod's command as Kubernetes
// would, JOB_COMPLETION_INDEX 0..N-1 at once on one shared directory, and
// the merge's: the summary.csv is the unsharded sweep's.
func TestKubernetesRecipe(t *testing.T) {
	short.Skip(t, "takes several seconds")
	objs := readK8s(t, "k8s/sweep-job.yaml")
	if len(objs) != 2 || objs[0].Kind != "PersistentVolumeClaim" || objs[0].APIVersion != "v1" {
		t.Fatalf("sweep-job.yaml: want a v1 PersistentVolumeClaim and a Job, got %d objects", len(objs))
	}
	pvc, job := objs[0], objs[1]
	if !slices.Contains(pvc.Spec.AccessModes, "ReadWriteMany") || pvc.Spec.Resources.Requests["storage"] == "" {
		t.Errorf("the claim %s: access modes %v, storage %q: shards on many nodes need ReadWriteMany and a size",
			pvc.Metadata.Name, pvc.Spec.AccessModes, pvc.Spec.Resources.Requests["storage"])
	}
	// No default class (most are ReadWriteOnce): a value the API server
	// refuses until run.sh puts the class given to it there.
	if c := pvc.Spec.StorageClassName; c == nil || dnsSubdomain.MatchString(*c) {
		t.Errorf("the claim's storageClassName is %v: want it there, and invalid until run.sh sets it (no cluster default)", c)
	}
	shard, mount := checkJobPod(t, job, pvc.Metadata.Name)
	if job.Spec.CompletionMode != "Indexed" {
		t.Errorf("completionMode %q, want Indexed", job.Spec.CompletionMode)
	}
	// Failures are limited per shard, not for all shards together, and an
	// evicted pod does not count.
	if job.Spec.BackoffLimit != nil || job.Spec.BackoffLimitPerIndex == nil || *job.Spec.BackoffLimitPerIndex < 1 {
		show := func(p *int) string {
			if p == nil {
				return "unset"
			}
			return strconv.Itoa(*p)
		}
		t.Errorf("backoffLimit %s, backoffLimitPerIndex %s: want no Job-wide backoffLimit and a backoffLimitPerIndex of 1 or more",
			show(job.Spec.BackoffLimit), show(job.Spec.BackoffLimitPerIndex))
	}
	ignoresEvictions := false
	for _, r := range job.Spec.PodFailurePolicy.Rules {
		for _, c := range r.OnPodConditions {
			ignoresEvictions = ignoresEvictions || r.Action == "Ignore" && c.Type == "DisruptionTarget"
		}
	}
	if !ignoresEvictions {
		t.Errorf("the Job's podFailurePolicy does not ignore evictions (DisruptionTarget)")
	}
	n := job.Spec.Completions
	shards := ""
	for _, e := range shard.Env {
		if e.Name == "SHARDS" {
			shards = e.Value
		}
	}
	if n < 1 || job.Spec.Parallelism != n || shards != strconv.Itoa(n) {
		t.Errorf("completions %d, parallelism %d, SHARDS %q: want them equal (N)", n, job.Spec.Parallelism, shards)
	}
	if !strings.Contains(shard.Args[0], `--shard "$JOB_COMPLETION_INDEX/$SHARDS"`) || !strings.Contains(shard.Args[0], "--out "+mount+"/") {
		t.Errorf("the shard's command %q does not run --shard \"$JOB_COMPLETION_INDEX/$SHARDS\" into the volume %s", shard.Args[0], mount)
	}
	merges := readK8s(t, "k8s/merge-job.yaml")
	if len(merges) != 1 {
		t.Fatalf("merge-job.yaml: %d objects, want the merge Job", len(merges))
	}
	merge, mmount := checkJobPod(t, merges[0], pvc.Metadata.Name)
	if merges[0].Spec.CompletionMode != "" || merges[0].Spec.Completions != 1 {
		t.Errorf("the merge Job runs %d pods (%q): want one", merges[0].Spec.Completions, merges[0].Spec.CompletionMode)
	}
	out := regexp.MustCompile(`--out (\S+)`).FindStringSubmatch(shard.Args[0])
	if out == nil || !strings.Contains(merge.Args[0], "skyloop sweep merge "+strings.Replace(out[1], mount, mmount, 1)) {
		t.Errorf("the merge's command %q does not merge the shards' --out %v", merge.Args[0], out)
	}
	if b, err := exec.Command("bash", "-n", filepath.Join(deployDir, "k8s", "run.sh")).CombinedOutput(); err != nil {
		t.Errorf("run.sh: %v\n%s", err, b)
	}

	// The pods, here: a smaller sweep of the manifest's experiment
	// (SWEEP_ARGS set).
	env := skyloopOnPath(t)
	vol := t.TempDir()
	const args = "--seeds 2 --duration 10s"
	type result struct {
		out string
		err error
	}
	done := make(chan result, n)
	for k := 0; k < n; k++ {
		go func() {
			o, err := runPod(shard, mount, vol, env, fmt.Sprint("JOB_COMPLETION_INDEX=", k), "SWEEP_ARGS="+args)
			done <- result{o, err}
		}()
	}
	for k := 0; k < n; k++ {
		if r := <-done; r.err != nil {
			t.Fatalf("a shard pod failed: %v\n%s", r.err, r.out)
		}
	}
	o, err := runPod(merge, mmount, vol, env)
	if err != nil {
		t.Fatalf("the merge pod failed: %v\n%s", err, o)
	}
	var experiment string
	for _, e := range shard.Env {
		if e.Name == "EXPERIMENT" {
			experiment = e.Value
		}
	}
	m, _ := filepath.Glob(filepath.Join(vol, "*", "*", "summary.csv"))
	if len(m) != 1 {
		t.Fatalf("the merge wrote %v, want one summary.csv", m)
	}
	got, _ := os.ReadFile(m[0])
	if string(got) != unshardedSummary(t, append([]string{experiment}, strings.Fields(args)...)...) {
		t.Errorf("summary.csv of the Kubernetes recipe differs from the unsharded sweep's")
	}
}

// TestDockerfile checks deploy/Dockerfile without Docker: a Go build stage
// on the Go of go.mod that builds ./cmd/skyloop, and a Debian 12 runtime
// stage with the binary and the packages the backends ask for when they
// are missing (the ns-3 backend's ErrNoNS3, MuJoCo's InstallHint), which
// are .ci/run's for ns-3 but for the tests' tshark; the ns-3 program is
// built at image build time with a built-in ns-3 scenario.
func TestDockerfile(t *testing.T) {
	df := readDeploy(t, "Dockerfile")
	// Continuation lines joined.
	df = regexp.MustCompile(`\\\n\s*`).ReplaceAllString(df, " ")
	type stage struct {
		from, name string
		lines      []string
	}
	var stages []stage
	for _, l := range strings.Split(df, "\n") {
		l = strings.TrimSpace(l)
		if l == "" || strings.HasPrefix(l, "#") {
			continue
		}
		if f := strings.Fields(l); f[0] == "FROM" {
			if len(f) != 4 || !strings.EqualFold(f[2], "AS") {
				t.Fatalf("%q: want FROM IMAGE AS NAME", l)
			}
			stages = append(stages, stage{from: f[1], name: f[3]})
			continue
		}
		if len(stages) == 0 {
			t.Fatalf("%q before the first FROM", l)
		}
		stages[len(stages)-1].lines = append(stages[len(stages)-1].lines, l)
	}
	if len(stages) != 2 {
		t.Fatalf("%d stages, want build and runtime", len(stages))
	}
	build, run := stages[0], stages[1]

	gomod, _ := os.ReadFile("../../go.mod")
	gv := regexp.MustCompile(`(?m)^go (\d+\.\d+)`).FindSubmatch(gomod)
	if gv == nil || build.from != "golang:"+string(gv[1])+"-bookworm" {
		t.Errorf("the build stage is FROM %s, want golang:%s-bookworm (go.mod)", build.from, gv[1])
	}
	goBuild := ""
	for _, l := range build.lines {
		if strings.HasPrefix(l, "RUN ") && strings.Contains(l, "go build") {
			goBuild = l
		}
	}
	if !strings.Contains(goBuild, "-o /out/skyloop ./cmd/skyloop") || !strings.Contains(goBuild, "CGO_ENABLED=0") {
		t.Errorf("the build stage's go build is %q: want CGO_ENABLED=0 ... -o /out/skyloop ./cmd/skyloop", goBuild)
	}

	if !regexp.MustCompile(`^debian:bookworm(-slim)?$`).MatchString(run.from) {
		t.Errorf("the runtime stage is FROM %s, want debian:bookworm", run.from)
	}
	var pkgs []string
	var copied, parquet, entry, cache, warm bool
	for _, l := range run.lines {
		if m := regexp.MustCompile(`apt-get install -y --no-install-recommends ([^&]+)`).FindStringSubmatch(l); m != nil {
			pkgs = append(pkgs, strings.Fields(m[1])...)
		}
		copied = copied || l == "COPY --from="+build.name+" /out/skyloop /usr/local/bin/skyloop"
		parquet = parquet || l == "COPY --from="+build.name+" /out/skyloop-parquet /usr/local/bin/skyloop-parquet"
		entry = entry || l == `ENTRYPOINT ["skyloop"]`
		cache = cache || strings.HasPrefix(l, "ENV SKYLOOP_CACHE=")
		if m := regexp.MustCompile(`skyloop run (\S+) `).FindStringSubmatch(l); m != nil {
			b, ok := scenarios.Lookup(m[1])
			warm = ok && strings.Contains(string(b), "backend: ns3")
		}
	}
	if !copied || !entry {
		t.Errorf("the runtime stage does not copy the binary from %s to /usr/local/bin/skyloop and run it", build.name)
	}
	if !parquet || !slices.ContainsFunc(build.lines, func(l string) bool { return strings.Contains(l, "-o /out/skyloop-parquet ./cmd/skyloop-parquet") }) {
		t.Errorf("the image has no skyloop-parquet next to skyloop (built in %s, copied to /usr/local/bin): runs in format parquet would fail", build.name)
	}
	if !cache || !warm {
		t.Errorf("the runtime stage does not build the ns-3 program into SKYLOOP_CACHE with a built-in ns-3 scenario")
	}
	want := strings.Fields(regexp.MustCompile("apt-get install -y ([^`]+)`").FindStringSubmatch(ns3.ErrNoNS3.Error())[1])
	want = append(want, regexp.MustCompile(`apt-get install -y (\S+)`).FindStringSubmatch(mjlib.InstallHint)[1])
	slices.Sort(want)
	slices.Sort(pkgs)
	if !slices.Equal(pkgs, want) {
		t.Errorf("the runtime stage installs %v, want %v (what the ns-3 and MuJoCo backends ask for)", pkgs, want)
	}
	ci, _ := os.ReadFile("../../.ci/run")
	for _, l := range strings.Split(string(ci), "\n") {
		if m := regexp.MustCompile(`apt-get install -y --no-install-recommends (.*libns3-dev.*)`).FindStringSubmatch(l); m != nil {
			for _, p := range strings.Fields(m[1]) {
				if p != "tshark" && !slices.Contains(pkgs, p) {
					t.Errorf(".ci/run installs %s for ns-3, the image does not", p)
				}
			}
		}
	}
	ignore := readDeploy(t, "../.dockerignore")
	for _, p := range []string{".git", "runs"} {
		if !slices.Contains(strings.Fields(ignore), p) {
			t.Errorf(".dockerignore does not leave out %s", p)
		}
	}
}

// realSlurm is a one-node Slurm cluster of its own (slurmctld, slurmd,
// munged from Debian's slurm-wlm and munge), started by startSlurm.
type realSlurm struct {
	dir string
	// env runs Slurm's commands against this cluster: SLURM_CONF set, no
	// SLURM_*/SBATCH_* variable of the test's own environment, and skyloop
	// (this test binary) first on PATH.
	env []string
}

// command returns a Slurm command against this cluster.
func (s *realSlurm) command(name string, args ...string) *exec.Cmd {
	cmd := exec.Command(name, args...)
	cmd.Env = s.env
	return cmd
}

// output runs a Slurm command and returns its standard output.
func (s *realSlurm) output(t *testing.T, name string, args ...string) string {
	t.Helper()
	b, err := s.command(name, args...).Output()
	if err != nil {
		var stderr []byte
		if ee, ok := err.(*exec.ExitError); ok {
			stderr = ee.Stderr
		}
		t.Fatalf("%s %s: %v\n%s", name, strings.Join(args, " "), err, stderr)
	}
	return string(b)
}

// neverStarts are the reasons for which Slurm keeps a job pending for ever.
var neverStarts = []string{"PartitionConfig", "BadConstraints", "PartitionNodeLimit", "DependencyNeverSatisfied", "ReqNodeNotAvail"}

// wait returns once no job is queued (pending or running); it fails at
// once when a job waits for a reason that never passes.
func (s *realSlurm) wait(t *testing.T) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Minute)
	for {
		q := strings.TrimSpace(s.output(t, "squeue", "-h", "-o", "%i %T %r %A"))
		if q == "" {
			return
		}
		for _, l := range strings.Split(q, "\n") {
			if f := strings.Fields(l); len(f) == 4 && f[1] == "PENDING" && slices.Contains(neverStarts, f[2]) {
				t.Fatalf("job %s is pending for ever (reason %s): no node can run it\n%s", f[0], f[2],
					s.output(t, "scontrol", "show", "job", f[3]))
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("jobs still queued after 10 minutes:\n%s", q)
		}
		time.Sleep(250 * time.Millisecond)
	}
}

// state returns the JobState of a job, or of one task of an array job.
func (s *realSlurm) state(t *testing.T, job string, task int) string {
	t.Helper()
	for _, l := range strings.Split(s.output(t, "scontrol", "-o", "show", "job", job), "\n") {
		st := regexp.MustCompile(`\bJobState=(\S+)`).FindStringSubmatch(l)
		at := regexp.MustCompile(`\bArrayTaskId=(\S+)`).FindStringSubmatch(l)
		if st != nil && (task < 0 || at != nil && at[1] == strconv.Itoa(task)) {
			return st[1]
		}
	}
	return "unknown"
}

// freePort returns a TCP port that was free a moment ago.
func freePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", ":0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// slurmConf is the cluster's slurm.conf: one node (NODE) of 2 CPUs on this
// host, reached at 127.0.0.1; everything in DIR; root runs everything; no
// accounting, cgroups or MPI. config_overrides: the node has 2 CPUs and
// 8 GiB whatever the machine has (the recipe must cope with a node smaller
// than it asks for).
const slurmConf = `ClusterName=skyloop-test
SlurmctldHost=HOST(127.0.0.1)
SlurmctldPort=CTLDPORT
SlurmdPort=SLURMDPORT
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket=DIR/sock/munge.sock
StateSaveLocation=DIR/state
SlurmdSpoolDir=DIR/spool
SlurmctldPidFile=DIR/slurmctld.pid
SlurmdPidFile=DIR/slurmd.pid
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
MpiDefault=none
MailProg=/bin/true
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
SlurmdParameters=config_overrides
ReturnToService=2
MinJobAge=3600
NodeName=NODE NodeHostname=HOST NodeAddr=127.0.0.1 CPUs=2 RealMemory=8192 State=UNKNOWN
PartitionName=skyloop Nodes=NODE Default=YES MaxTime=INFINITE State=UP
`

// startSlurm starts a one-node Slurm of its own for the test and stops it
// (jobs cancelled, daemons stopped, files removed) when the test ends. Its
// configuration, ports, MUNGE key and socket, state and spool directories
// are the test's own, so a Slurm or MUNGE already installed or running on
// the machine is neither used nor disturbed. Without root or the packages,
// or when the daemons do not come up, the test is skipped with the reason,
// unless SKYLOOP_REQUIRE_SLURM is set (CI), which fails it.
func startSlurm(t *testing.T) *realSlurm {
	t.Helper()
	short.Skip(t, "needs Slurm and root")
	unavailable := func(format string, args ...any) {
		t.Helper()
		msg := fmt.Sprintf(format, args...)
		if os.Getenv("SKYLOOP_REQUIRE_SLURM") != "" {
			t.Fatalf("a real Slurm is required (SKYLOOP_REQUIRE_SLURM) but %s", msg)
		}
		t.Skipf("skipping the run on a real Slurm: %s", msg)
	}
	if os.Geteuid() != 0 {
		unavailable("not root (the test starts slurmctld, slurmd and munged)")
	}
	bins := map[string]string{}
	for _, name := range []string{"munged", "slurmctld", "slurmd", "sbatch", "squeue", "sinfo", "scontrol", "scancel"} {
		p, err := exec.LookPath(name)
		if err != nil {
			if _, e := os.Stat("/usr/sbin/" + name); e == nil {
				p, err = "/usr/sbin/"+name, nil
			}
		}
		if err != nil {
			unavailable("no %s (apt-get install -y slurm-wlm munge)", name)
		}
		bins[name] = p
	}

	// munged wants the directories of its socket searchable by all, and
	// its key private.
	dir, err := os.MkdirTemp("", "skyloop-slurm-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	for d, mode := range map[string]os.FileMode{"": 0o755, "sock": 0o755, "munge": 0o700, "state": 0o700, "spool": 0o755, "log": 0o755} {
		p := filepath.Join(dir, d)
		if err := os.MkdirAll(p, mode); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(p, mode); err != nil {
			t.Fatal(err)
		}
	}
	key := make([]byte, 1024)
	if _, err := rand.Read(key); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "munge", "munge.key"), key, 0o600); err != nil {
		t.Fatal(err)
	}
	host, err := os.Hostname()
	if err != nil {
		t.Fatal(err)
	}
	host, _, _ = strings.Cut(host, ".")
	conf := filepath.Join(dir, "slurm.conf")
	text := strings.NewReplacer("DIR", dir, "HOST", host, "NODE", "skyloop-node",
		"CTLDPORT", strconv.Itoa(freePort(t)), "SLURMDPORT", strconv.Itoa(freePort(t))).Replace(slurmConf)
	if err := os.WriteFile(conf, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	s := &realSlurm{dir: dir}
	for _, e := range skyloopOnPath(t) {
		if !strings.HasPrefix(e, "SLURM_") && !strings.HasPrefix(e, "SBATCH_") && !strings.HasPrefix(e, "SQUEUE_") &&
			!strings.HasPrefix(e, "SINFO_") && !strings.HasPrefix(e, "SCONTROL_") {
			s.env = append(s.env, e)
		}
	}
	s.env = append(s.env, "SLURM_CONF="+conf)

	// daemon starts a daemon in the foreground, its output in log/NAME,
	// and stops it when the test ends (SIGTERM, then SIGKILL after 30 s).
	daemon := func(name string, args ...string) (log string, exited <-chan struct{}) {
		log = filepath.Join(dir, "log", name)
		f, err := os.Create(log)
		if err != nil {
			t.Fatal(err)
		}
		cmd := s.command(bins[name], args...)
		cmd.Stdout, cmd.Stderr = f, f
		// A daemon does not outlive a test binary that dies.
		cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGTERM}
		if err := cmd.Start(); err != nil {
			f.Close()
			unavailable("%s does not start: %v", name, err)
		}
		done := make(chan struct{})
		go func() { cmd.Wait(); f.Close(); close(done) }()
		t.Cleanup(func() {
			cmd.Process.Signal(syscall.SIGTERM)
			select {
			case <-done:
			case <-time.After(30 * time.Second):
				cmd.Process.Kill()
				<-done
			}
		})
		return log, done
	}
	tail := func(log string) string {
		b, _ := os.ReadFile(log)
		if len(b) > 3000 {
			b = b[len(b)-3000:]
		}
		return string(b)
	}
	// up polls until ok, or fails (or skips) when a daemon has exited or
	// after 2 minutes.
	up := func(what string, ok func() bool, logs map[string]<-chan struct{}) {
		t.Helper()
		deadline := time.Now().Add(2 * time.Minute)
		for !ok() {
			for log, exited := range logs {
				select {
				case <-exited:
					unavailable("%s: %s exited:\n%s", what, filepath.Base(log), tail(log))
				default:
				}
			}
			if time.Now().After(deadline) {
				var all string
				for log := range logs {
					all += "\n" + filepath.Base(log) + ":\n" + tail(log)
				}
				unavailable("%s: not after 2 minutes%s", what, all)
			}
			time.Sleep(200 * time.Millisecond)
		}
	}

	sock := filepath.Join(dir, "sock", "munge.sock")
	mlog, mdone := daemon("munged", "-F", "--socket="+sock,
		"--key-file="+filepath.Join(dir, "munge", "munge.key"), "--pid-file="+filepath.Join(dir, "munge", "munged.pid"),
		"--log-file="+filepath.Join(dir, "munge", "munged.log"), "--seed-file="+filepath.Join(dir, "munge", "munged.seed"))
	up("munged's socket", func() bool { _, err := os.Stat(sock); return err == nil }, map[string]<-chan struct{}{mlog: mdone})
	clog, cdone := daemon("slurmctld", "-D", "-f", conf)
	dlog, ddone := daemon("slurmd", "-D", "-N", "skyloop-node", "-f", conf)
	// Jobs are cancelled before the daemons stop (cleanups run last first).
	t.Cleanup(func() {
		if ids := strings.Fields(s.output(t, "squeue", "-h", "-o", "%A")); len(ids) > 0 {
			s.command("scancel", ids...).Run()
			deadline := time.Now().Add(time.Minute)
			for time.Now().Before(deadline) {
				if b, err := s.command("squeue", "-h").Output(); err != nil || len(b) == 0 {
					break
				}
				time.Sleep(200 * time.Millisecond)
			}
		}
	})
	up("the node idle in sinfo", func() bool {
		b, _ := s.command(bins["sinfo"], "-h", "-N", "-o", "%T").Output()
		return strings.TrimSpace(string(b)) == "idle"
	}, map[string]<-chan struct{}{mlog: mdone, clog: cdone, dlog: ddone})
	return s
}

// TestSlurmRecipeOnRealSlurm runs deploy/slurm on a real Slurm (Debian's
// slurm-wlm and munge, one node of 2 CPUs, started by the test as root;
// see startSlurm): checkSlurmRecipe, the recipe end to end with a failed
// shard run again, and a request no node can run (memory) refused by
// submit.sh with Slurm's reason, nothing queued.
func TestSlurmRecipeOnRealSlurm(t *testing.T) {
	s := startSlurm(t)
	home := t.TempDir()
	env := append(slices.Clone(s.env), "HOME="+home)
	checkSlurmRecipe(t, slurmCluster{env: env, dir: t.TempDir(), wait: s.wait, state: s.state})

	cmd := exec.Command("bash", filepath.Join(deployDir, "slurm", "submit.sh"), "2", "netbots/delay", t.TempDir())
	cmd.Env = append(slices.Clone(env), "SBATCH_MEM_PER_CPU=1000000")
	b, err := cmd.CombinedOutput()
	if err == nil || !strings.Contains(string(b), "Requested node configuration is not available") || !strings.Contains(string(b), "nothing was submitted") {
		t.Errorf("submit.sh asking 1 TB per CPU of a node of 8 GB: %v\n%s\nwant a refusal with Slurm's reason", err, b)
	}
	if q := s.output(t, "squeue", "-h"); q != "" {
		t.Errorf("submit.sh queued jobs no node can run:\n%s", q)
	}
}

// dnsSubdomain is what Kubernetes accepts as a storage class name.
var dnsSubdomain = regexp.MustCompile(`^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$`)

// fakeKubectl stands in for kubectl as far as deploy/k8s/run.sh uses it: a
// Job per file job-NAME in $KUBE_STATE holding its true conditions ("" while
// it runs); apply of an existing Job changes nothing ("unchanged", as
// kubectl says for a finished Job applied again), of a new one makes it
// $FAKE_OUTCOME (default Complete); the applied manifests are kept as
// applied-N.yaml and every call is logged in calls.
const fakeKubectl = `#!/bin/bash
set -u
s=$KUBE_STATE
echo "$*" >> "$s/calls"
case "$1 $2" in
  "get storageclass")
    for c in $FAKE_CLASSES; do [ "$c" = "$3" ] && exit 0; done
    echo "Error from server (NotFound): storageclasses.storage.k8s.io \"$3\" not found" >&2; exit 1 ;;
  "get job")
    if [ ! -e "$s/job-$3" ]; then
      case " $* " in *" --ignore-not-found "*) exit 0 ;; esac
      echo "Error from server (NotFound): jobs.batch \"$3\" not found" >&2; exit 1
    fi
    case " $* " in *" -o name "*) echo "job.batch/$3" ;; *) cat "$s/job-$3" ;; esac ;;
  "get pvc") printf Bound ;;
  "delete job")
    if [ -e "$s/job-$3" ]; then rm "$s/job-$3"; echo "job.batch \"$3\" deleted"; fi ;;
  "apply -f")
    n=$(ls "$s" | grep -c '^applied-')
    if [ "$3" = - ]; then cat > "$s/applied-$n.yaml"; else cp "$3" "$s/applied-$n.yaml"; fi
    for j in $(sed -n 's/^  name: \(skyloop-sweep\|skyloop-merge\)$/\1/p' "$s/applied-$n.yaml"); do
      if [ -e "$s/job-$j" ]; then echo "job.batch/$j unchanged"; continue; fi
      printf %s "${FAKE_OUTCOME:-Complete}" > "$s/job-$j"; echo "job.batch/$j created"
    done ;;
  "logs job/skyloop-merge") echo "skyloop: merged" ;;
  *) echo "fake kubectl: unexpected call: $*" >&2; exit 1 ;;
esac
`

// TestKubernetesRunScript runs deploy/k8s/run.sh with a stand-in kubectl
// (no Kubernetes cluster is available to the tests): it refuses to run
// without a storage class or with one the cluster does not have, puts the
// class given into the claim, deletes the Jobs of a finished earlier run
// before applying (else kubectl apply leaves the old Job "unchanged" and the
// merge runs on the old results), and refuses, touching nothing, while an
// earlier sweep Job still runs.
func TestKubernetesRunScript(t *testing.T) {
	fake := t.TempDir()
	if err := os.WriteFile(filepath.Join(fake, "kubectl"), []byte(fakeKubectl), 0o755); err != nil {
		t.Fatal(err)
	}
	type job struct{ name, state string }
	run := func(jobs []job, args ...string) (state string, out string, err error) {
		t.Helper()
		state = t.TempDir()
		for _, j := range jobs {
			if err := os.WriteFile(filepath.Join(state, "job-"+j.name), []byte(j.state), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		// A run.sh that waits for ever (for a Job that never ends) is
		// stopped after a generous while and fails.
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		cmd := exec.CommandContext(ctx, "bash", append([]string{filepath.Join(deployDir, "k8s", "run.sh")}, args...)...)
		cmd.Env = append(os.Environ(), "PATH="+fake+string(os.PathListSeparator)+os.Getenv("PATH"),
			"KUBE_STATE="+state, "FAKE_CLASSES=standard nfs-client")
		cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
		cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
		b, err := cmd.CombinedOutput()
		if ctx.Err() != nil {
			err = fmt.Errorf("still waiting after 2 minutes: %w", err)
		}
		return state, string(b), err
	}
	calls := func(state string) []string {
		b, _ := os.ReadFile(filepath.Join(state, "calls"))
		return strings.Split(strings.TrimSpace(string(b)), "\n")
	}
	applied := func(state string) []string {
		var a []string
		for _, c := range calls(state) {
			if strings.HasPrefix(c, "apply ") {
				a = append(a, c)
			}
		}
		return a
	}

	for _, args := range [][]string{{}, {"ssd"}, {"Not_A_Class"}} {
		state, out, err := run(nil, args...)
		if err == nil || !strings.Contains(out, "storage class") || len(applied(state)) > 0 {
			t.Errorf("run.sh %v: %v\n%s\nwant a refusal naming the storage class, nothing applied (calls: %q)", args, err, out, calls(state))
		}
	}

	for _, class := range []string{"nfs-client", "none"} {
		state, out, err := run([]job{{"skyloop-sweep", "Complete"}, {"skyloop-merge", "Failed"}}, class)
		if err != nil || !strings.Contains(out, "skyloop: merged") {
			t.Fatalf("run.sh %s after a finished run: %v\n%s", class, err, out)
		}
		c := calls(state)
		del := slices.IndexFunc(c, func(s string) bool { return strings.HasPrefix(s, "delete job skyloop-sweep") })
		app := slices.IndexFunc(c, func(s string) bool { return strings.HasPrefix(s, "apply ") })
		delMerge := slices.IndexFunc(c, func(s string) bool { return strings.HasPrefix(s, "delete job skyloop-merge") })
		if del < 0 || delMerge < 0 || app < del || app < delMerge {
			t.Errorf("run.sh %s after a finished run called kubectl:\n%s\nwant the earlier Jobs deleted before anything is applied", class, strings.Join(c, "\n"))
		}
		if !strings.Contains(out, "job.batch/skyloop-sweep created") || !strings.Contains(out, "job.batch/skyloop-merge created") {
			t.Errorf("run.sh %s after a finished run did not start new Jobs:\n%s", class, out)
		}
		manifest, err := os.ReadFile(filepath.Join(state, "applied-0.yaml"))
		if err != nil {
			t.Fatalf("run.sh %s applied no manifest from its standard input: %v", class, err)
		}
		want := class
		if class == "none" {
			want = ""
		}
		got := "(none)"
		if objs := parseK8s(t, "the manifest run.sh applied", string(manifest)); len(objs) == 2 && objs[0].Spec.StorageClassName != nil {
			got = *objs[0].Spec.StorageClassName
		}
		if got != want {
			t.Errorf("run.sh %s applied a claim with storageClassName %q, want %q", class, got, want)
		}
	}

	state, out, err := run([]job{{"skyloop-sweep", ""}}, "nfs-client")
	if err == nil || !strings.Contains(out, "still running") {
		t.Errorf("run.sh while the sweep Job runs: %v\n%s\nwant a refusal saying it is still running", err, out)
	}
	for _, c := range calls(state) {
		if strings.HasPrefix(c, "delete ") || strings.HasPrefix(c, "apply ") {
			t.Errorf("run.sh while the sweep Job runs called kubectl %s", c)
		}
	}
}

// TestNS3InstallLinesAgree: the packages the ns-3 backend asks for when it
// is missing (ErrNoNS3) are all in the README's apt line, which
// scripts/check-apt-line.sh checks on a clean Debian 12, and in docs/ns3.md;
// the Dockerfile and .ci/run are compared with ErrNoNS3 by TestDockerfile.
func TestNS3InstallLinesAgree(t *testing.T) {
	want := strings.Fields(regexp.MustCompile("apt-get install -y ([^`]+)`").FindStringSubmatch(ns3.ErrNoNS3.Error())[1])
	if !slices.Contains(want, "libsqlite3-dev") {
		t.Errorf("ErrNoNS3 asks for %v: ns-3's pkg-config names libsqlite3.so, which only libsqlite3-dev brings", want)
	}
	for _, f := range []string{"../../README.md", "../../docs/ns3.md"} {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		text := strings.Join(strings.Fields(string(b)), " ")
		var line []string
		for _, m := range regexp.MustCompile("apt-get install -y ([^`]+)`").FindAllStringSubmatch(text, -1) {
			if p := strings.Fields(m[1]); slices.Contains(p, "libns3-dev") {
				line = p
				break
			}
		}
		for _, p := range want {
			if !slices.Contains(line, p) {
				t.Errorf("%s: the apt line for ns-3 %v lacks %s", f, line, p)
			}
		}
	}
}
