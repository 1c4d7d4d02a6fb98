// Package report turns run results into figures: PNG plots drawn with
// gonum/plot, whose embedded fonts make the output byte-stable.
package report

import (
	"errors"
	"fmt"
	"image/color"
	"io/fs"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"

	"skyloop/geom"
)

// Track is one vehicle's path for a trajectory plot.
type Track struct {
	Name    string
	Points  []geom.Vec3
	Times   []float64 // seconds, one per point
	Targets []geom.Vec3
}

// Tracker collects vehicle paths with a bounded number of points per
// vehicle: when a track reaches the limit, every other point is dropped and
// the sampling stride doubles, so long runs keep their whole shape.
type Tracker struct {
	Tracks []Track
	limit  int
	stride []int
	count  []int
}

// NewTracker returns a tracker for the named vehicles, keeping at most
// limit points each.
func NewTracker(names []string, limit int) *Tracker {
	t := &Tracker{Tracks: make([]Track, len(names)), limit: max(limit, 16), stride: make([]int, len(names)), count: make([]int, len(names))}
	for i, n := range names {
		t.Tracks[i].Name = n
		t.stride[i] = 1
	}
	return t
}

// Add records vehicle i at p at time ts (seconds); a target, when has is
// true and it differs from the last one recorded, is kept as a marker.
func (t *Tracker) Add(i int, ts float64, p geom.Vec3, target geom.Vec3, has bool) {
	tr := &t.Tracks[i]
	if has && (len(tr.Targets) == 0 || tr.Targets[len(tr.Targets)-1].Dist(target) > 0.01) {
		tr.Targets = append(tr.Targets, target)
	}
	t.count[i]++
	if (t.count[i]-1)%t.stride[i] != 0 {
		return
	}
	tr.Points = append(tr.Points, p)
	tr.Times = append(tr.Times, ts)
	if len(tr.Points) >= t.limit {
		k := 0
		for j := 0; j < len(tr.Points); j += 2 {
			tr.Points[k], tr.Times[k] = tr.Points[j], tr.Times[j]
			k++
		}
		tr.Points, tr.Times = tr.Points[:k], tr.Times[:k]
		t.stride[i] *= 2
	}
}

// TrajectoryPNG draws the tracks seen from above (x east, y north), one
// metre as long on both axes, with each start marked by a circle, each
// target by a cross and the obstacles shaded, the legend to the right of
// the data (vehicles named up to 12 of them), and returns the PNG bytes.
func TrajectoryPNG(title string, tracks []Track, obstacles []geom.Box) ([]byte, error) {
	f, err := trajectoryFigure(title, tracks, obstacles)
	if err != nil {
		return nil, err
	}
	return f.png()
}

// manyTracks is the most vehicles whose targets the trajectory plot draws.
const manyTracks = 200

func trajectoryFigure(title string, tracks []Track, obstacles []geom.Box) (*figure, error) {
	p := plot.New()
	p.Title.Text = title
	p.X.Label.Text = "x east (m)"
	p.Y.Label.Text = "y north (m)"
	p.Add(plotter.NewGrid())
	f := single(p, 9*vg.Inch, 7.5*vg.Inch)
	var obstacle plot.Thumbnailer
	for _, o := range obstacles {
		poly, err := plotter.NewPolygon(plotter.XYs{{X: o.Min.X, Y: o.Min.Y}, {X: o.Max.X, Y: o.Min.Y}, {X: o.Max.X, Y: o.Max.Y}, {X: o.Min.X, Y: o.Max.Y}})
		if err != nil {
			return nil, err
		}
		poly.Color = gray
		p.Add(poly)
		obstacle = poly
	}
	// A swarm's marks shrink with its size, so that thousands of them do
	// not bury the tracks (at 10,000 the targets alone would paint the
	// whole square): lines and start dots thin out beyond 100 vehicles,
	// and targets are drawn for at most manyTracks vehicles.
	scale := min(1, math.Sqrt(100/float64(max(len(tracks), 1))))
	var starts, targets plotter.XYs
	for i, tr := range tracks {
		if len(tr.Points) == 0 {
			continue
		}
		xy := make(plotter.XYs, len(tr.Points))
		for j, pt := range tr.Points {
			xy[j] = plotter.XY{X: pt.X, Y: pt.Y}
		}
		l, err := plotter.NewLine(xy)
		if err != nil {
			return nil, fmt.Errorf("track %s: %w", tr.Name, err)
		}
		l.Color = palette(i)
		l.Width = vg.Points(max(0.3, 1.2*scale))
		p.Add(l)
		if len(tracks) <= 12 {
			f.Legend = append(f.Legend, legendEntry{Name: tr.Name, Thumbs: []plot.Thumbnailer{l}})
		}
		starts = append(starts, plotter.XY{X: tr.Points[0].X, Y: tr.Points[0].Y})
		if len(tracks) <= manyTracks {
			for _, tg := range tr.Targets {
				targets = append(targets, plotter.XY{X: tg.X, Y: tg.Y})
			}
		}
	}
	if len(tracks) > manyTracks {
		f.LegendTitle = fmt.Sprintf("%d vehicles\n(targets not drawn)", len(tracks))
	} else if len(tracks) > 12 {
		f.LegendTitle = fmt.Sprintf("%d vehicles", len(tracks))
	}
	if len(starts) > 0 {
		s, err := plotter.NewScatter(starts)
		if err != nil {
			return nil, err
		}
		s.GlyphStyle.Shape = draw.CircleGlyph{}
		s.GlyphStyle.Radius = vg.Points(max(0.5, 3*scale))
		p.Add(s)
		f.Legend = append(f.Legend, legendEntry{Name: "start", Thumbs: []plot.Thumbnailer{s}})
	}
	if len(targets) > 0 {
		s, err := plotter.NewScatter(targets)
		if err != nil {
			return nil, err
		}
		s.GlyphStyle.Shape = draw.CrossGlyph{}
		s.GlyphStyle.Radius = vg.Points(max(1.5, 4*scale))
		s.GlyphStyle.Color = color.RGBA{R: 200, A: 255}
		p.Add(s)
		f.Legend = append(f.Legend, legendEntry{Name: "target", Thumbs: []plot.Thumbnailer{s}})
	}
	if obstacle != nil {
		f.Legend = append(f.Legend, legendEntry{Name: "obstacle", Thumbs: []plot.Thumbnailer{obstacle}})
	}
	equalAxes(p)
	squareData(f)
	return f, nil
}

// squareData widens a one-panel figure by its legend's strip, so that its
// data area is about square (equalAxes then makes a metre as long on
// both axes).
func squareData(f *figure) {
	lw, _ := f.legendSize()
	if lw > 0 {
		lw += 3 * figPad
	}
	f.W = f.H + lw
}

// equalAxes makes one metre the same length on both axes.
func equalAxes(p *plot.Plot) {
	dx, dy := p.X.Max-p.X.Min, p.Y.Max-p.Y.Min
	if dx <= 0 || dy <= 0 || math.IsInf(dx, 0) || math.IsInf(dy, 0) {
		return
	}
	if dx > dy {
		c := (p.Y.Max + p.Y.Min) / 2
		p.Y.Min, p.Y.Max = c-dx/2, c+dx/2
	} else {
		c := (p.X.Max + p.X.Min) / 2
		p.X.Min, p.X.Max = c-dy/2, c+dy/2
	}
}

func palette(i int) color.Color {
	cs := []color.RGBA{{31, 119, 180, 255}, {255, 127, 14, 255}, {44, 160, 44, 255}, {214, 39, 40, 255}, {148, 103, 189, 255},
		{140, 86, 75, 255}, {227, 119, 194, 255}, {127, 127, 127, 255}, {188, 189, 34, 255}, {23, 190, 207, 255}}
	return cs[i%len(cs)]
}

// WriteFile writes b to path atomically: a reader (or a run killed
// meanwhile) sees the old file or the new one, never half of it. The
// temporary file beside path is created new (O_EXCL, a name of its own),
// so that nothing already there (a symbolic link to another file, say) is
// written through; the rename then replaces whatever path was, a link
// included, without following it.
func WriteFile(path string, b []byte) error {
	dir, base := filepath.Split(path)
	if dir == "" {
		dir = "."
	}
	var f *os.File
	var tmp string
	var err error
	for range 100 {
		tmp = filepath.Join(dir, fmt.Sprintf(".%s.tmp-%d", base, rand.Uint32()))
		f, err = os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
		if !errors.Is(err, fs.ErrExist) {
			break
		}
	}
	if err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	_, err = f.Write(b)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, path)
	}
	if err != nil {
		os.Remove(tmp)
		return fmt.Errorf("writing %s: %w", path, err)
	}
	return nil
}
