package report

import (
	"fmt"
	"image/color"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"

	"skyloop/geom"
)

// CoverageGrid is a coverage area for CoveragePNG: Cols x Rows square
// cells of side Cell from Origin, with the obstacle cells as [col, row].
type CoverageGrid struct {
	Origin     [2]float64
	Cols, Rows int
	Cell       float64
	Obstacles  [][2]int
}

// CoveragePanel is one plan drawn over the grid: the planned path through
// cell centres and, optionally, the track flown.
type CoveragePanel struct {
	Title string
	Plan  []geom.Vec3
	Flown []geom.Vec3
	// Missed are the centres of the planned cells the flight did not
	// pass close enough to, drawn as red crosses.
	Missed []geom.Vec3
}

// CoveragePNG draws the panels side by side (titled "title: panel"), each
// over the grid with its
// obstacle cells filled: the plan as a line through the cell centres
// (start marked by a circle), the flown track thinner beneath it and the
// cells the flight missed crossed out.
func CoveragePNG(title string, g CoverageGrid, panels []CoveragePanel) ([]byte, error) {
	f, err := coverageFigure(title, g, panels)
	if err != nil {
		return nil, err
	}
	return f.png()
}

func coverageFigure(title string, g CoverageGrid, panels []CoveragePanel) (*figure, error) {
	if len(panels) == 0 {
		return nil, fmt.Errorf("coverage figure: no plans to draw")
	}
	f := &figure{W: 5.5*vg.Inch*vg.Length(len(panels)) + 1.3*vg.Inch, H: 4.5 * vg.Inch, Panels: [][]*plot.Plot{nil}}
	seen := map[string]bool{}
	for _, pn := range panels {
		p, legend, err := coveragePlot(g, pn)
		if err != nil {
			return nil, err
		}
		p.Title.Text = title + ": " + pn.Title
		f.Panels[0] = append(f.Panels[0], p)
		for _, e := range legend {
			if !seen[e.Name] {
				seen[e.Name] = true
				f.Legend = append(f.Legend, e)
			}
		}
	}
	return f, nil
}

func coveragePlot(g CoverageGrid, pn CoveragePanel) (*plot.Plot, []legendEntry, error) {
	var legend []legendEntry
	p := plot.New()
	p.Title.Text = pn.Title
	p.X.Label.Text = "x east (m)"
	p.Y.Label.Text = "y north (m)"
	x0, y0 := g.Origin[0], g.Origin[1]
	x1, y1 := x0+float64(g.Cols)*g.Cell, y0+float64(g.Rows)*g.Cell
	box := func(ax, ay, bx, by float64, fill color.Color) error {
		poly, err := plotter.NewPolygon(plotter.XYs{{X: ax, Y: ay}, {X: bx, Y: ay}, {X: bx, Y: by}, {X: ax, Y: by}})
		if err != nil {
			return err
		}
		poly.Color = fill
		poly.LineStyle.Width = 0
		p.Add(poly)
		return nil
	}
	for _, o := range g.Obstacles {
		ax, ay := x0+float64(o[0])*g.Cell, y0+float64(o[1])*g.Cell
		if err := box(ax, ay, ax+g.Cell, ay+g.Cell, color.Gray{Y: 120}); err != nil {
			return nil, nil, err
		}
	}
	// Cell borders.
	gridStyle := draw.LineStyle{Color: color.Gray{Y: 210}, Width: vg.Points(0.5)}
	for c := 0; c <= g.Cols; c++ {
		x := x0 + float64(c)*g.Cell
		l, _ := plotter.NewLine(plotter.XYs{{X: x, Y: y0}, {X: x, Y: y1}})
		l.LineStyle = gridStyle
		p.Add(l)
	}
	for r := 0; r <= g.Rows; r++ {
		y := y0 + float64(r)*g.Cell
		l, _ := plotter.NewLine(plotter.XYs{{X: x0, Y: y}, {X: x1, Y: y}})
		l.LineStyle = gridStyle
		p.Add(l)
	}
	xys := func(pts []geom.Vec3) plotter.XYs {
		out := make(plotter.XYs, len(pts))
		for i, q := range pts {
			out[i] = plotter.XY{X: q.X, Y: q.Y}
		}
		return out
	}
	if len(pn.Flown) > 1 {
		l, err := plotter.NewLine(xys(pn.Flown))
		if err != nil {
			return nil, nil, err
		}
		l.Color = color.RGBA{R: 255, G: 127, B: 14, A: 255}
		l.Width = vg.Points(0.8)
		p.Add(l)
		legend = append(legend, legendEntry{Name: "flown", Thumbs: []plot.Thumbnailer{l}})
	}
	if len(pn.Plan) > 0 {
		l, err := plotter.NewLine(xys(pn.Plan))
		if err != nil {
			return nil, nil, err
		}
		l.Color = color.RGBA{R: 31, G: 119, B: 180, A: 255}
		l.Width = vg.Points(1.6)
		l.Dashes = []vg.Length{vg.Points(4), vg.Points(2)}
		p.Add(l)
		legend = append(legend, legendEntry{Name: "plan", Thumbs: []plot.Thumbnailer{l}})
		s, err := plotter.NewScatter(xys(pn.Plan[:1]))
		if err != nil {
			return nil, nil, err
		}
		s.GlyphStyle.Shape = draw.CircleGlyph{}
		s.GlyphStyle.Radius = vg.Points(4)
		p.Add(s)
		legend = append(legend, legendEntry{Name: "start", Thumbs: []plot.Thumbnailer{s}})
	}
	if len(pn.Missed) > 0 {
		s, err := plotter.NewScatter(xys(pn.Missed))
		if err != nil {
			return nil, nil, err
		}
		s.GlyphStyle.Shape = draw.CrossGlyph{}
		s.GlyphStyle.Color = color.RGBA{R: 214, G: 39, B: 40, A: 255}
		s.GlyphStyle.Radius = vg.Points(5)
		p.Add(s)
		legend = append(legend, legendEntry{Name: "missed", Thumbs: []plot.Thumbnailer{s}})
	}
	p.X.Min, p.X.Max, p.Y.Min, p.Y.Max = x0, x1, y0, y1
	return p, legend, nil
}
