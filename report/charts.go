package report

import (
	"fmt"
	"slices"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

// Series is one named line of a chart.
type Series struct {
	Name string
	X, Y []float64
}

// LinesPNG draws series as lines and returns the PNG bytes: each series
// in a colour and dash pattern of its own (lines that coincide still
// show), the legend to the right of the data, and the y axis from 0 when
// no value is negative.
func LinesPNG(title, xlabel, ylabel string, series []Series) ([]byte, error) {
	f, err := linesFigure(title, xlabel, ylabel, series)
	if err != nil {
		return nil, err
	}
	return f.png()
}

func linesFigure(title, xlabel, ylabel string, series []Series) (*figure, error) {
	p := plot.New()
	p.Title.Text = title
	p.X.Label.Text = xlabel
	p.Y.Label.Text = ylabel
	p.Add(plotter.NewGrid())
	f := single(p, 9*vg.Inch, 5*vg.Inch)
	n := len(series)
	for i, s := range series {
		if len(s.X) == 0 {
			continue
		}
		l, err := line(s.X, s.Y)
		if err != nil {
			return nil, fmt.Errorf("series %s: %w", s.Name, err)
		}
		l.LineStyle = seriesStyle(i, n)
		p.Add(l)
		f.Legend = append(f.Legend, legendEntry{Name: s.Name, Thumbs: []plot.Thumbnailer{l}})
	}
	fromZero(&p.Y)
	return f, nil
}

func line(x, y []float64) (*plotter.Line, error) {
	xy := make(plotter.XYs, len(x))
	for j := range x {
		xy[j] = plotter.XY{X: x[j], Y: y[j]}
	}
	return plotter.NewLine(xy)
}

// CDFPanelsPNG draws one cumulative distribution per panel, stacked with
// a shared x axis from 0 and y from 0 to 1, so that no distribution hides
// another; it returns the PNG bytes.
func CDFPanelsPNG(title, xlabel, ylabel string, series []Series) ([]byte, error) {
	f, err := cdfPanelsFigure(title, xlabel, ylabel, series)
	if err != nil {
		return nil, err
	}
	return f.png()
}

func cdfPanelsFigure(title, xlabel, ylabel string, series []Series) (*figure, error) {
	var kept []Series
	for _, s := range series {
		if len(s.X) > 0 {
			kept = append(kept, s)
		}
	}
	if len(kept) == 0 {
		return nil, fmt.Errorf("nothing to plot")
	}
	xmax := 0.0
	for _, s := range kept {
		xmax = max(xmax, slices.Max(s.X))
	}
	if xmax <= 0 {
		xmax = 1
	}
	f := &figure{W: 9 * vg.Inch, H: vg.Length(0.8+1.6*float64(len(kept))) * vg.Inch}
	for i, s := range kept {
		p := plot.New()
		if i == 0 {
			p.Title.Text = title
		}
		p.Add(plotter.NewGrid())
		l, err := cdfLine(s, i)
		if err != nil {
			return nil, err
		}
		p.Add(l)
		p.Y.Label.Text = s.Name + "\n" + ylabel
		if i == len(kept)-1 {
			p.X.Label.Text = xlabel
		}
		p.X.Min, p.X.Max = 0, xmax*1.02
		p.Y.Min, p.Y.Max = 0, 1
		f.Panels = append(f.Panels, []*plot.Plot{p})
	}
	return f, nil
}

// cdfLine is the line of distribution s, the i-th: a staircase, as an
// empirical distribution holds each fraction until the next value and
// then jumps.
func cdfLine(s Series, i int) (*plotter.Line, error) {
	l, err := line(s.X, s.Y)
	if err != nil {
		return nil, fmt.Errorf("series %s: %w", s.Name, err)
	}
	l.LineStyle = draw.LineStyle{Color: palette(i), Width: vg.Points(2)}
	l.StepStyle = plotter.PostStep
	return l, nil
}

// ProfilePNG draws, one above the other, every track's altitude and its
// east offset from its first point against time, with the vehicles'
// legend to the right of both panels, and returns the PNG bytes.
func ProfilePNG(title string, tracks []Track) ([]byte, error) {
	f, err := profileFigure(title, tracks)
	if err != nil {
		return nil, err
	}
	return f.png()
}

func profileFigure(title string, tracks []Track) (*figure, error) {
	alt, east := plot.New(), plot.New()
	alt.Title.Text = title
	alt.Y.Label.Text = "altitude z (m)"
	east.Y.Label.Text = "east offset x - x0 (m)"
	east.X.Label.Text = "time (s)"
	f := &figure{W: 9 * vg.Inch, H: 7 * vg.Inch, Panels: [][]*plot.Plot{{alt}, {east}}}
	for _, p := range []*plot.Plot{alt, east} {
		p.Add(plotter.NewGrid())
	}
	for i, tr := range tracks {
		if len(tr.Points) == 0 {
			continue
		}
		za, xe := make(plotter.XYs, len(tr.Points)), make(plotter.XYs, len(tr.Points))
		for j, pt := range tr.Points {
			za[j] = plotter.XY{X: tr.Times[j], Y: pt.Z}
			xe[j] = plotter.XY{X: tr.Times[j], Y: pt.X - tr.Points[0].X}
		}
		for k, xy := range []plotter.XYs{za, xe} {
			l, err := plotter.NewLine(xy)
			if err != nil {
				return nil, fmt.Errorf("track %s: %w", tr.Name, err)
			}
			l.LineStyle = seriesStyle(i, len(tracks))
			if k == 0 {
				alt.Add(l)
				f.Legend = append(f.Legend, legendEntry{Name: tr.Name, Thumbs: []plot.Thumbnailer{l}})
			} else {
				east.Add(l)
			}
		}
	}
	fromZero(&alt.Y)
	fromZero(&alt.X)
	fromZero(&east.X)
	return f, nil
}

// BarsPNG draws one point per category with a ±std error bar, categories
// in order along the x axis and the y axis from 0, and returns the PNG
// bytes.
func BarsPNG(title, xlabel, ylabel string, labels []string, means, stds []float64) ([]byte, error) {
	f, err := barsFigure(title, xlabel, ylabel, nil, labels, means, stds)
	if err != nil {
		return nil, err
	}
	return f.png()
}

// ValuesPNG draws mean ± std against a numeric x (a swept parameter's
// values, in its unit): the points joined in the order of x, the x axis
// numeric and the y axis from 0; it returns the PNG bytes.
func ValuesPNG(title, xlabel, ylabel string, xs, means, stds []float64) ([]byte, error) {
	f, err := barsFigure(title, xlabel, ylabel, xs, nil, means, stds)
	if err != nil {
		return nil, err
	}
	return f.png()
}

// barsFigure is BarsPNG's figure (xs nil: categories labels at 0, 1, ...)
// or ValuesPNG's (points sorted by x).
func barsFigure(title, xlabel, ylabel string, xs []float64, labels []string, means, stds []float64) (*figure, error) {
	if len(means) != len(stds) || (xs != nil && len(xs) != len(means)) || (xs == nil && len(labels) != len(means)) {
		return nil, fmt.Errorf("%s: %d means, %d stds, %d values, %d labels", title, len(means), len(stds), len(xs), len(labels))
	}
	p := plot.New()
	p.Title.Text = title
	p.X.Label.Text = xlabel
	p.Y.Label.Text = ylabel
	p.Add(plotter.NewGrid())
	idx := make([]int, len(means))
	for i := range idx {
		idx[i] = i
	}
	if xs != nil {
		slices.SortStableFunc(idx, func(a, b int) int { return cmpF(xs[a], xs[b]) })
	}
	pts := make(plotter.XYs, len(means))
	errs := make(plotter.YErrors, len(means))
	for k, i := range idx {
		x := float64(i)
		if xs != nil {
			x = xs[i]
		}
		pts[k] = plotter.XY{X: x, Y: means[i]}
		errs[k].Low, errs[k].High = stds[i], stds[i]
	}
	lp, sc, err := plotter.NewLinePoints(pts)
	if err != nil {
		return nil, err
	}
	lp.Color = palette(0)
	sc.Color = palette(0)
	sc.GlyphStyle.Shape = draw.CircleGlyph{}
	sc.GlyphStyle.Radius = vg.Points(3)
	p.Add(lp, sc)
	eb, err := plotter.NewYErrorBars(struct {
		plotter.XYs
		plotter.YErrors
	}{pts, errs})
	if err != nil {
		return nil, err
	}
	p.Add(eb)
	if xs == nil {
		ticks := make([]plot.Tick, len(labels))
		for i, l := range labels {
			ticks[i] = plot.Tick{Value: float64(i), Label: l}
		}
		p.X.Tick.Marker = plot.ConstantTicks(ticks)
		p.X.Min, p.X.Max = -0.5, float64(len(labels))-0.5
	} else {
		fromZero(&p.X)
		pad := (p.X.Max - p.X.Min) * 0.05
		p.X.Max += pad
		if p.X.Min != 0 {
			p.X.Min -= pad
		}
	}
	fromZero(&p.Y)
	return single(p, 8*vg.Inch, 5*vg.Inch), nil
}

func cmpF(a, b float64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}
