package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"skyloop/netsim/ns3"
	"skyloop/scenario"
	"skyloop/scenarios"
	"skyloop/vehicle/mujoco"
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

// fakeSbatch stands in for Slurm's sbatch: it logs its arguments, runs an
// array job's tasks at once (SLURM_ARRAY_TASK_ID, SLURM_ARRAY_TASK_COUNT)
// and any other job after them, and prints a job id.
const fakeSbatch = `#!/bin/bash
set -u
echo "$*" >> "$SBATCH_LOG"
array= script=
for a in "$@"; do
  case "$a" in
    --array=*) array=${a#--array=} ;;
    -*) ;;
    *) script=$a ;;
  esac
done
n=$(wc -l < "$SBATCH_LOG")
if [ -n "$array" ]; then
  lo=${array%-*} hi=${array#*-} pids=()
  for ((k = lo; k <= hi; k++)); do
    SLURM_ARRAY_TASK_ID=$k SLURM_ARRAY_TASK_COUNT=$((hi - lo + 1)) SLURM_CPUS_PER_TASK=1 \
      bash "$script" > "$SBATCH_OUT/job$n-task$k.out" 2>&1 &
    pids+=($!)
  done
  for p in "${pids[@]}"; do wait "$p" || echo "task failed" >> "$SBATCH_OUT/failed"; done
else
  bash "$script" > "$SBATCH_OUT/job$n.out" 2>&1 || echo "job $n failed" >> "$SBATCH_OUT/failed"
fi
echo "$((1000 + n))"
`

// TestSlurmRecipe checks deploy/slurm: the array line and the --shard
// expression of sweep.sbatch, and submit.sh end to end with a stand-in
// sbatch that runs the array's tasks at once and then the dependent merge:
// the merged summary.csv is the unsharded sweep's.
func TestSlurmRecipe(t *testing.T) {
	sweepScript := readDeploy(t, "slurm/sweep.sbatch")
	am := regexp.MustCompile(`(?m)^#SBATCH --array=(\d+)-(\d+)$`).FindStringSubmatch(sweepScript)
	if am == nil || am[1] != "0" {
		t.Fatalf("sweep.sbatch has no #SBATCH --array=0-(N-1) line")
	}
	if !strings.Contains(sweepScript, `--shard "$SLURM_ARRAY_TASK_ID/$SLURM_ARRAY_TASK_COUNT"`) {
		t.Errorf("sweep.sbatch does not run --shard \"$SLURM_ARRAY_TASK_ID/$SLURM_ARRAY_TASK_COUNT\"")
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
	if err := os.WriteFile(filepath.Join(fake, "sbatch"), []byte(fakeSbatch), 0o755); err != nil {
		t.Fatal(err)
	}
	logs := t.TempDir()
	out := filepath.Join(t.TempDir(), "runs")
	exp := writeShardExperiment(t, 4, "10s")
	env := append(skyloopOnPath(t, fake), "SBATCH_LOG="+filepath.Join(logs, "sbatch.log"), "SBATCH_OUT="+logs,
		"SWEEP_ARGS=--seeds 3", "HOME="+t.TempDir())
	cmd := exec.Command("bash", filepath.Join(deployDir, "slurm", "submit.sh"), "3", exp, out)
	cmd.Env = env
	b, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("submit.sh: %v\n%s", err, b)
	}
	if f, err := os.ReadFile(filepath.Join(logs, "failed")); err == nil {
		t.Errorf("jobs failed: %s", f)
	}
	calls, _ := os.ReadFile(filepath.Join(logs, "sbatch.log"))
	lines := strings.Split(strings.TrimSpace(string(calls)), "\n")
	if len(lines) != 2 || !strings.Contains(lines[0], "--array=0-2 ") || !strings.HasSuffix(lines[0], "/sweep.sbatch") ||
		!strings.Contains(lines[1], "--dependency=afterany:1001 ") || !strings.HasSuffix(lines[1], "/merge.sbatch") {
		t.Errorf("submit.sh called sbatch with:\n%s\nwant the array 0-2 of sweep.sbatch, then merge.sbatch after it", calls)
	}
	for k := 0; k < 3; k++ {
		task, _ := os.ReadFile(filepath.Join(logs, fmt.Sprintf("job1-task%d.out", k)))
		if !strings.Contains(string(task), fmt.Sprintf("shardy shard %d/3: ", k)) {
			t.Errorf("array task %d printed:\n%s", k, task)
		}
	}
	got, err := os.ReadFile(filepath.Join(out, "shardy", "summary.csv"))
	if err != nil {
		merge, _ := os.ReadFile(filepath.Join(logs, "job2.out"))
		t.Fatalf("the merge job wrote no summary.csv: %v\n%s", err, merge)
	}
	if string(got) != unshardedSummary(t, exp, "--seeds", "3") {
		t.Errorf("summary.csv of the Slurm recipe differs from the unsharded sweep's")
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
			AccessModes []string     `yaml:"accessModes"`
			Resources   k8sResources `yaml:"resources"`
			// Job
			CompletionMode string `yaml:"completionMode"`
			Completions    int    `yaml:"completions"`
			Parallelism    int    `yaml:"parallelism"`
			BackoffLimit   *int   `yaml:"backoffLimit"`
			Template       struct {
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

// readK8s decodes the objects of a manifest (documents separated by ---).
func readK8s(t *testing.T, name string) []k8sObject {
	t.Helper()
	var objs []k8sObject
	for i, doc := range regexp.MustCompile(`(?m)^---$`).Split(readDeploy(t, name), -1) {
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
	objs := readK8s(t, "k8s/sweep-job.yaml")
	if len(objs) != 2 || objs[0].Kind != "PersistentVolumeClaim" || objs[0].APIVersion != "v1" {
		t.Fatalf("sweep-job.yaml: want a v1 PersistentVolumeClaim and a Job, got %d objects", len(objs))
	}
	pvc, job := objs[0], objs[1]
	if !slices.Contains(pvc.Spec.AccessModes, "ReadWriteMany") || pvc.Spec.Resources.Requests["storage"] == "" {
		t.Errorf("the claim %s: access modes %v, storage %q: shards on many nodes need ReadWriteMany and a size",
			pvc.Metadata.Name, pvc.Spec.AccessModes, pvc.Spec.Resources.Requests["storage"])
	}
	shard, mount := checkJobPod(t, job, pvc.Metadata.Name)
	if job.Spec.CompletionMode != "Indexed" {
		t.Errorf("completionMode %q, want Indexed", job.Spec.CompletionMode)
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
	var copied, entry, cache, warm bool
	for _, l := range run.lines {
		if m := regexp.MustCompile(`apt-get install -y --no-install-recommends ([^&]+)`).FindStringSubmatch(l); m != nil {
			pkgs = append(pkgs, strings.Fields(m[1])...)
		}
		copied = copied || l == "COPY --from="+build.name+" /out/skyloop /usr/local/bin/skyloop"
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
	if !cache || !warm {
		t.Errorf("the runtime stage does not build the ns-3 program into SKYLOOP_CACHE with a built-in ns-3 scenario")
	}
	want := strings.Fields(regexp.MustCompile("apt-get install -y ([^`]+)`").FindStringSubmatch(ns3.ErrNoNS3.Error())[1])
	want = append(want, regexp.MustCompile(`apt-get install -y (\S+)`).FindStringSubmatch(mujoco.InstallHint)[1])
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
