package sweep

import (
	"bytes"
	"encoding/base64"
	"errors"
	"fmt"
	"html/template"
	"io/fs"
	"log/slog"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	"skyloop/internal/untrusted"
	"skyloop/report"
)

// ReportHTML returns one self-contained HTML page for the experiments at
// dir (an experiment directory, or a directory of them, as Summarize
// takes): per experiment, the table of the main metrics per variant (mean
// ± std over seeds, as skyloop summarize prints it) and every figure of
// its figures directory, inlined.
//
// The directory may come from someone else: summary.csv is read within
// caps, and only figures that are regular files inside the experiment's
// directory (no link out of it, no device) and really PNG files (the PNG
// signature), at most untrusted.MaxImage bytes each and maxFigures or
// maxEmbedded bytes in all per page, are inlined. Any other file in
// figures/ is skipped with a note on the page and a warning in the log.
func ReportHTML(dir string) ([]byte, error) {
	files, err := summaryFiles(dir)
	if err != nil {
		return nil, err
	}
	var page sweepPage
	for _, c := range summaryColumns {
		page.Heads = append(page.Heads, c.head)
	}
	budget := embedBudget{bytes: maxEmbedded, figures: maxFigures}
	for _, f := range files {
		exp, variants, vals, err := Table(f)
		if err != nil {
			return nil, err
		}
		e := sweepExperiment{Name: exp, Dir: filepath.Dir(f)}
		for _, v := range variants {
			row := sweepRow{Variant: v, Seeds: len(vals[v]["seed"])}
			e.Runs += row.Seeds
			for _, c := range summaryColumns {
				m, s := MeanStd(vals[v][c.col])
				if math.IsNaN(m) {
					row.Cells = append(row.Cells, "–")
					continue
				}
				row.Cells = append(row.Cells, fmt.Sprintf(c.format, m)+" ± "+fmt.Sprintf(c.format, s))
			}
			e.Rows = append(e.Rows, row)
		}
		e.Figures, e.Notes = embedFigures(e.Dir, &budget)
		page.Experiments = append(page.Experiments, e)
	}
	var out bytes.Buffer
	if err := sweepTemplate.Execute(&out, &page); err != nil {
		return nil, fmt.Errorf("sweep report: %w", err)
	}
	return out.Bytes(), nil
}

// Bounds on what one page inlines: far more than the figures of any
// sweep, far less than would exhaust a browser.
const (
	maxEmbedded = 256 << 20 // bytes of figures
	maxFigures  = 2000
)

type embedBudget struct {
	bytes   int64
	figures int
}

// pngSignature starts every PNG file.
var pngSignature = []byte("\x89PNG\r\n\x1a\n")

// embedFigures reads the PNG figures of expDir/figures in name order, and
// notes the files skipped and why (also logged as warnings).
func embedFigures(expDir string, budget *embedBudget) ([]sweepFigure, []string) {
	var figs []sweepFigure
	var notes []string
	skip := func(name, why string) {
		slog.Warn("sweep report: figure not inlined", "file", filepath.Join(expDir, "figures", name), "why", why)
		notes = append(notes, fmt.Sprintf("figures/%s not inlined: %s", name, why))
	}
	root, err := os.OpenRoot(expDir)
	if err != nil {
		skip("", err.Error())
		return nil, notes
	}
	defer root.Close()
	fd, err := root.Open("figures")
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		skip("", err.Error())
		return nil, notes
	}
	ents, err := fd.ReadDir(-1)
	fd.Close()
	if err != nil {
		skip("", err.Error())
		return nil, notes
	}
	var names []string
	for _, e := range ents {
		if strings.HasSuffix(e.Name(), ".png") {
			names = append(names, e.Name())
		}
	}
	sort.Strings(names)
	for _, name := range names {
		if budget.figures <= 0 {
			skip(name, fmt.Sprintf("the page has %d figures already", maxFigures))
			continue
		}
		b, err := untrusted.ReadFileIn(expDir, "figures/"+name, min(untrusted.MaxImage, budget.bytes))
		switch {
		case errors.Is(err, untrusted.ErrTooLarge) && budget.bytes < untrusted.MaxImage:
			skip(name, fmt.Sprintf("the page has %d MiB of figures already", (maxEmbedded-budget.bytes)>>20))
			continue
		case err != nil:
			skip(name, err.Error())
			continue
		case !bytes.HasPrefix(b, pngSignature):
			skip(name, "not a PNG file")
			continue
		}
		budget.bytes -= int64(len(b))
		budget.figures--
		figs = append(figs, sweepFigure{Name: strings.TrimSuffix(name, ".png"), Caption: figureCaption(strings.TrimSuffix(name, ".png")),
			Src: template.URL("data:image/png;base64," + base64.StdEncoding.EncodeToString(b))})
	}
	return figs, notes
}

type sweepPage struct {
	Heads       []string
	Experiments []sweepExperiment
}

type sweepExperiment struct {
	Name, Dir string
	Runs      int
	Rows      []sweepRow
	Figures   []sweepFigure
	Notes     []string
}

type sweepRow struct {
	Variant string
	Seeds   int
	Cells   []string
}

type sweepFigure struct {
	Name, Caption string
	Src           template.URL
}

// figureNames are the readable names of the sweep figures' file stems.
var figureNames = map[string]string{
	"trajectories": "Trajectories", "latency_cdf": "Latency CDF", "aoi": "Age of information of state updates",
	"gap_error": "Gap error after warm-up", "received_vs_distance": "Packets received against distance",
	"received_vs_rss": "Packets received against received power", "data_tx": "Data sent", "data_rx": "Data received",
	"overhead": "Routing overhead", "delay_cdf": "Delay CDF", "coverage_paths": "Coverage paths",
}

// figureCaption turns a figure's file stem into its caption: the figure's
// readable name, then its variant with human values
// ("trajectories-jitter=200ms" is "Trajectories, jitter 200 ms").
func figureCaption(stem string) string {
	base, variant, _ := strings.Cut(stem, "-")
	name, ok := figureNames[base]
	if !ok {
		name = strings.ReplaceAll(base, "_", " ")
		if name != "" {
			name = strings.ToUpper(name[:1]) + name[1:]
		}
	}
	if variant == "" {
		return name
	}
	var parts []string
	for _, kv := range strings.Split(variant, ",") {
		if k, v, ok := strings.Cut(kv, "="); ok {
			parts = append(parts, k+" "+report.Human(v))
		} else {
			parts = append(parts, report.Human(kv))
		}
	}
	return name + ", " + strings.Join(parts, ", ")
}

var sweepTemplate = template.Must(template.New("sweep").Funcs(template.FuncMap{"itoa": strconv.Itoa}).Parse(`<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8">
<title>skyloop sweep report</title>
<style>
body{font-family:system-ui,sans-serif;margin:2em;max-width:80em;color:#222}
table{border-collapse:collapse;margin:0.5em 0 1.5em}
.scroll{overflow-x:auto;max-width:100%}
th,td{border:1px solid #ccc;padding:0.25em 0.6em;text-align:right}
td{white-space:nowrap} th{white-space:normal;min-width:5em;vertical-align:bottom}
th{background:#f2f2f2} td:first-child,th:first-child{text-align:left}
figure{margin:1em 0} img{max-width:100%;border:1px solid #ddd}
.note{color:#777}
</style></head><body>
<h1>Sweep report</h1>
{{range .Experiments}}<h2 class="experiment">Experiment {{.Name}}</h2>
<p>{{.Runs}} runs; mean ± standard deviation over seeds.</p>
<div class="scroll"><table><tr><th>variant</th><th>seeds</th>{{range $.Heads}}<th>{{.}}</th>{{end}}</tr>
{{range .Rows}}<tr><td>{{.Variant}}</td><td>{{itoa .Seeds}}</td>{{range .Cells}}<td>{{.}}</td>{{end}}</tr>
{{end}}</table></div>
{{range .Figures}}<figure><figcaption title="{{.Name}}.png">{{.Caption}}</figcaption><img alt="{{.Caption}}" src="{{.Src}}"></figure>
{{end}}{{range .Notes}}<p class="note">{{.}}</p>
{{end}}{{end}}<p class="note">Written by skyloop report html.</p>
</body></html>
`))
