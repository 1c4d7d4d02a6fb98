package report

import (
	"fmt"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"

	"skyloop/geom"
)

// maxTwinPoints bounds the points drawn per path in TwinPNG: longer paths
// are drawn with every n-th sample (and the last).
const maxTwinPoints = 1000

// TwinPNG draws each vehicle's path seen from above in a run (solid) and in
// its ideal-network twin (dashed, the same colour); run[i] and twin[i] are
// vehicle i's sampled positions, names[i] its name. The legend, to the
// right of the data, keys the two styles and names up to 12 vehicles. It
// returns the PNG bytes.
func TwinPNG(title string, names []string, run, twin [][]geom.Vec3) ([]byte, error) {
	f, err := twinFigure(title, names, run, twin)
	if err != nil {
		return nil, err
	}
	return f.png()
}

func twinFigure(title string, names []string, run, twin [][]geom.Vec3) (*figure, error) {
	p := plot.New()
	p.Title.Text = title
	p.X.Label.Text = "x east (m)"
	p.Y.Label.Text = "y north (m)"
	p.Add(plotter.NewGrid())
	f := single(p, 9*vg.Inch, 7.5*vg.Inch)
	// The legend's key to the styles first.
	for k, name := range []string{"run (solid)", "ideal twin (dashed)"} {
		l, err := plotter.NewLine(plotter.XYs{})
		if err != nil {
			return nil, err
		}
		l.Color = palette(7)
		l.Width = vg.Points(1.2)
		if k == 1 {
			l.Dashes = []vg.Length{vg.Points(4), vg.Points(3)}
		}
		f.Legend = append(f.Legend, legendEntry{Name: name, Thumbs: []plot.Thumbnailer{l}})
	}
	for i := range names {
		for k, pts := range [][][]geom.Vec3{twin, run} {
			if i >= len(pts) || len(pts[i]) == 0 {
				continue
			}
			l, err := plotter.NewLine(decimate(pts[i]))
			if err != nil {
				return nil, fmt.Errorf("track %s: %w", names[i], err)
			}
			l.Color = palette(i)
			l.Width = vg.Points(1.2)
			if k == 0 {
				l.Dashes = []vg.Length{vg.Points(4), vg.Points(3)}
			}
			p.Add(l)
			if len(names) <= 12 && k == 1 {
				f.Legend = append(f.Legend, legendEntry{Name: names[i], Thumbs: []plot.Thumbnailer{l}})
			}
		}
	}
	if len(names) > 12 {
		f.LegendTitle = fmt.Sprintf("%d vehicles", len(names))
	}
	equalAxes(p)
	squareData(f)
	return f, nil
}

// decimate returns the path's XY points, at most about maxTwinPoints.
func decimate(pts []geom.Vec3) plotter.XYs {
	step := max(1, (len(pts)+maxTwinPoints-1)/maxTwinPoints)
	xy := make(plotter.XYs, 0, len(pts)/step+1)
	for j := 0; j < len(pts); j += step {
		xy = append(xy, plotter.XY{X: pts[j].X, Y: pts[j].Y})
	}
	if (len(pts)-1)%step != 0 {
		xy = append(xy, plotter.XY{X: pts[len(pts)-1].X, Y: pts[len(pts)-1].Y})
	}
	return xy
}
