package report

import (
	"bytes"
	"fmt"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"
)

// Series is one named line of a chart.
type Series struct {
	Name string
	X, Y []float64
}

// LinesPNG draws series as lines and returns the PNG bytes.
func LinesPNG(title, xlabel, ylabel string, series []Series) ([]byte, error) {
	p := plot.New()
	p.Title.Text = title
	p.X.Label.Text = xlabel
	p.Y.Label.Text = ylabel
	p.Add(plotter.NewGrid())
	for i, s := range series {
		if len(s.X) == 0 {
			continue
		}
		xy := make(plotter.XYs, len(s.X))
		for j := range s.X {
			xy[j] = plotter.XY{X: s.X[j], Y: s.Y[j]}
		}
		l, err := plotter.NewLine(xy)
		if err != nil {
			return nil, fmt.Errorf("series %s: %w", s.Name, err)
		}
		l.Color = palette(i)
		l.Width = vg.Points(1.5)
		p.Add(l)
		p.Legend.Add(s.Name, l)
	}
	p.Legend.Top = false
	p.Legend.Left = false
	return render(p, 8*vg.Inch, 5*vg.Inch)
}

// ProfilePNG draws, one above the other, every track's altitude and its
// east offset from its first point against time, and returns the PNG
// bytes.
func ProfilePNG(title string, tracks []Track) ([]byte, error) {
	alt, east := plot.New(), plot.New()
	alt.Title.Text = title
	alt.Y.Label.Text = "altitude z (m)"
	east.Y.Label.Text = "east offset x - x0 (m)"
	east.X.Label.Text = "time (s)"
	for _, p := range []*plot.Plot{alt, east} {
		p.Add(plotter.NewGrid())
		p.Legend.Top, p.Legend.Left = true, true
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
			l.Color = palette(i)
			l.Width = vg.Points(1.5)
			if k == 0 {
				alt.Add(l)
				alt.Legend.Add(tr.Name, l)
			} else {
				east.Add(l)
			}
		}
	}
	w, h := 8*vg.Inch, 7*vg.Inch
	img := vgimg.New(w, h)
	dc := draw.New(img)
	tiles := draw.Tiles{Rows: 2, Cols: 1, PadX: vg.Millimeter, PadY: 2 * vg.Millimeter, PadTop: vg.Millimeter, PadBottom: vg.Millimeter,
		PadLeft: vg.Millimeter, PadRight: 2 * vg.Millimeter}
	canvases := plot.Align([][]*plot.Plot{{alt}, {east}}, tiles, dc)
	alt.Draw(canvases[0][0])
	east.Draw(canvases[1][0])
	var buf bytes.Buffer
	if _, err := (vgimg.PngCanvas{Canvas: img}).WriteTo(&buf); err != nil {
		return nil, fmt.Errorf("rendering plot: %w", err)
	}
	return buf.Bytes(), nil
}

// BarsPNG draws one point per category with a ±std error bar, categories
// in order along the x axis, and returns the PNG bytes.
func BarsPNG(title, xlabel, ylabel string, labels []string, means, stds []float64) ([]byte, error) {
	p := plot.New()
	p.Title.Text = title
	p.X.Label.Text = xlabel
	p.Y.Label.Text = ylabel
	p.Add(plotter.NewGrid())
	pts := make(plotter.XYs, len(means))
	errs := make(plotter.YErrors, len(means))
	for i := range means {
		pts[i] = plotter.XY{X: float64(i), Y: means[i]}
		errs[i].Low, errs[i].High = stds[i], stds[i]
	}
	lp, sc, err := plotter.NewLinePoints(pts)
	if err != nil {
		return nil, err
	}
	lp.Color = palette(0)
	sc.Color = palette(0)
	p.Add(lp, sc)
	eb, err := plotter.NewYErrorBars(struct {
		plotter.XYs
		plotter.YErrors
	}{pts, errs})
	if err != nil {
		return nil, err
	}
	p.Add(eb)
	ticks := make([]plot.Tick, len(labels))
	for i, l := range labels {
		ticks[i] = plot.Tick{Value: float64(i), Label: l}
	}
	p.X.Tick.Marker = plot.ConstantTicks(ticks)
	p.X.Min, p.X.Max = -0.5, float64(len(labels))-0.5
	if p.Y.Min > 0 {
		p.Y.Min = 0
	}
	return render(p, 8*vg.Inch, 5*vg.Inch)
}
