package report

import (
	"fmt"
	"image/color"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
)

// Band is a quantity summarised per time bin: its mean, and its minimum
// and maximum as a shaded band around it.
type Band struct {
	Name         string
	Title        string // the panel's title (e.g. its statistics)
	X            []float64
	Mean, Lo, Hi []float64
}

// BandsPNG draws one panel per band, stacked with a shared time axis: the
// min-max band shaded, the mean as a line, a zero line; and returns the PNG
// bytes. The legend is to the right of the panels.
func BandsPNG(title, xlabel, ylabel string, bands []Band) ([]byte, error) {
	f, err := bandsFigure(title, xlabel, ylabel, bands)
	if err != nil {
		return nil, err
	}
	return f.png()
}

func bandsFigure(title, xlabel, ylabel string, bands []Band) (*figure, error) {
	if len(bands) == 0 {
		return nil, fmt.Errorf("nothing to plot")
	}
	plots := make([][]*plot.Plot, len(bands))
	var legend []legendEntry
	for i, b := range bands {
		if len(b.X) == 0 || len(b.Mean) != len(b.X) || len(b.Lo) != len(b.X) || len(b.Hi) != len(b.X) {
			return nil, fmt.Errorf("band %s: %d times, %d means, %d minima, %d maxima", b.Name, len(b.X), len(b.Mean), len(b.Lo), len(b.Hi))
		}
		p := plot.New()
		p.Title.Text = b.Title
		if i == 0 && title != "" {
			p.Title.Text = title + "\n" + b.Title
		}
		p.Y.Label.Text = b.Name + " " + ylabel
		if i == len(bands)-1 {
			p.X.Label.Text = xlabel
		}
		p.Add(plotter.NewGrid())
		c := palette(i).(color.RGBA)
		poly := make(plotter.XYs, 0, 2*len(b.X))
		for j := range b.X {
			poly = append(poly, plotter.XY{X: b.X[j], Y: b.Lo[j]})
		}
		for j := len(b.X) - 1; j >= 0; j-- {
			poly = append(poly, plotter.XY{X: b.X[j], Y: b.Hi[j]})
		}
		band, err := plotter.NewPolygon(poly)
		if err != nil {
			return nil, fmt.Errorf("band %s: %w", b.Name, err)
		}
		band.Color = color.NRGBA{c.R, c.G, c.B, 70}
		band.LineStyle.Width = 0
		band.LineStyle.Color = color.Transparent
		mean := make(plotter.XYs, len(b.X))
		for j := range b.X {
			mean[j] = plotter.XY{X: b.X[j], Y: b.Mean[j]}
		}
		l, err := plotter.NewLine(mean)
		if err != nil {
			return nil, fmt.Errorf("band %s: %w", b.Name, err)
		}
		l.Color = c
		l.Width = vg.Points(1.5)
		zero, _ := plotter.NewLine(plotter.XYs{{X: b.X[0], Y: 0}, {X: b.X[len(b.X)-1], Y: 0}})
		zero.Color = color.Gray{Y: 90}
		zero.Width = vg.Points(0.5)
		p.Add(band, zero, l)
		if i == 0 {
			zl := *zero
			zl.Color = color.Gray{Y: 90}
			legend = []legendEntry{{Name: "mean", Thumbs: []plot.Thumbnailer{l}}, {Name: "min-max", Thumbs: []plot.Thumbnailer{band}},
				{Name: "zero", Thumbs: []plot.Thumbnailer{&zl}}}
		}
		plots[i] = []*plot.Plot{p}
	}
	w, h := 9*vg.Inch, vg.Length(1+2.2*float64(len(bands)))*vg.Inch
	return &figure{W: w, H: h, Panels: plots, Legend: legend}, nil
}
