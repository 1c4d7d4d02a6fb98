package sweep

import (
	"bytes"
	"encoding/base64"
	"fmt"
	"html/template"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
)

// ReportHTML returns one self-contained HTML page for the experiments at
// dir (an experiment directory, or a directory of them, as Summarize
// takes): per experiment, the table of the main metrics per variant (mean
// ± std over seeds, as skyloop summarize prints it) and every figure of
// its figures directory, inlined.
func ReportHTML(dir string) ([]byte, error) {
	var files []string
	if _, err := os.Stat(filepath.Join(dir, "summary.csv")); err == nil {
		files = []string{filepath.Join(dir, "summary.csv")}
	} else {
		m, _ := filepath.Glob(filepath.Join(dir, "*", "summary.csv"))
		sort.Strings(m)
		files = m
	}
	if len(files) == 0 {
		return nil, fmt.Errorf("%s: %w (no summary.csv here or one level down; run skyloop sweep first)", dir, ErrNoResults)
	}
	var page sweepPage
	for _, c := range summaryColumns {
		page.Heads = append(page.Heads, c.head)
	}
	for _, f := range files {
		exp, variants, vals, err := Table(f)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", f, err)
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
		pngs, _ := filepath.Glob(filepath.Join(e.Dir, "figures", "*.png"))
		sort.Strings(pngs)
		for _, p := range pngs {
			b, err := os.ReadFile(p)
			if err != nil {
				return nil, err
			}
			e.Figures = append(e.Figures, sweepFigure{Name: strings.TrimSuffix(filepath.Base(p), ".png"),
				Src: template.URL("data:image/png;base64," + base64.StdEncoding.EncodeToString(b))})
		}
		page.Experiments = append(page.Experiments, e)
	}
	var out bytes.Buffer
	if err := sweepTemplate.Execute(&out, &page); err != nil {
		return nil, fmt.Errorf("sweep report: %w", err)
	}
	return out.Bytes(), nil
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
}

type sweepRow struct {
	Variant string
	Seeds   int
	Cells   []string
}

type sweepFigure struct {
	Name string
	Src  template.URL
}

var sweepTemplate = template.Must(template.New("sweep").Funcs(template.FuncMap{"itoa": strconv.Itoa}).Parse(`<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8">
<title>skyloop sweep report</title>
<style>
body{font-family:system-ui,sans-serif;margin:2em;max-width:80em;color:#222}
table{border-collapse:collapse;margin:0.5em 0 1.5em}
th,td{border:1px solid #ccc;padding:0.25em 0.6em;text-align:right;white-space:nowrap}
th{background:#f2f2f2} td:first-child,th:first-child{text-align:left}
figure{margin:1em 0} img{max-width:100%;border:1px solid #ddd}
</style></head><body>
<h1>Sweep report</h1>
{{range .Experiments}}<h2 class="experiment">Experiment {{.Name}}</h2>
<p>{{.Runs}} runs; mean ± standard deviation over seeds.</p>
<table><tr><th>variant</th><th>seeds</th>{{range $.Heads}}<th>{{.}}</th>{{end}}</tr>
{{range .Rows}}<tr><td>{{.Variant}}</td><td>{{itoa .Seeds}}</td>{{range .Cells}}<td>{{.}}</td>{{end}}</tr>
{{end}}</table>
{{range .Figures}}<figure><figcaption>{{.Name}}</figcaption><img alt="{{.Name}}" src="{{.Src}}"></figure>
{{end}}{{end}}<p style="color:#777">Written by skyloop report html.</p>
</body></html>
`))
