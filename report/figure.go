package report

import (
	"bytes"
	"fmt"
	"image/color"
	"math"
	"strconv"

	"gonum.org/v1/plot"
	gpal "gonum.org/v1/plot/palette"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"
)

// figure is a figure before it is drawn: panels in rows (each a plot with
// its axes and title), and to their right, outside every panel's data, a
// colour bar and a legend shared by the panels. Tests read a figure's
// plots and layout instead of its pixels.
type figure struct {
	W, H   vg.Length
	Panels [][]*plot.Plot
	Legend []legendEntry
	// LegendTitle heads the legend ("" for none).
	LegendTitle string
	Bar         *colorBar
}

// legendEntry is one line of a figure's legend.
type legendEntry struct {
	Name   string
	Thumbs []plot.Thumbnailer
}

// colorBar is the key of a heat map: the colour map's range, with the
// quantity and its unit as the bar's label.
type colorBar struct {
	Map   gpal.ColorMap
	Label string
}

// figLayout is where a figure's parts are drawn on its canvas.
type figLayout struct {
	Data   [][]vg.Rectangle // each panel's data area
	Legend vg.Rectangle     // the legend's extent (empty: none)
	Bar    vg.Rectangle     // the colour bar's canvas (empty: none)
}

const figPad = 2 * vg.Millimeter

// legendStyle is the legend's text style (a little smaller than the axes').
func legendStyle() plot.Legend {
	l := plot.NewLegend()
	l.TextStyle.Font.Size = vg.Points(10)
	l.Top, l.Left = true, true
	l.ThumbnailWidth = vg.Points(24)
	return l
}

// legendSize is the width and height the legend's entries need.
func (f *figure) legendSize() (w, h vg.Length) {
	if len(f.Legend) == 0 {
		return 0, 0
	}
	l := legendStyle()
	entries := f.Legend
	if f.LegendTitle != "" {
		entries = append([]legendEntry{{Name: f.LegendTitle}}, entries...)
	}
	for _, e := range entries {
		l.Add(e.Name, e.Thumbs...)
	}
	r := l.Rectangle(draw.Canvas{Rectangle: vg.Rectangle{Max: vg.Point{X: f.W, Y: f.H}}})
	return r.Size().X + vg.Points(4), r.Size().Y
}

// barWidth is the width of the colour bar's strip.
const barWidth = 1.1 * vg.Inch

// split returns the panels' canvas and the strip to their right.
func (f *figure) split(c draw.Canvas) (panels, strip draw.Canvas) {
	lw, _ := f.legendSize()
	sw := lw
	if f.Bar != nil {
		sw = max(sw, barWidth)
	}
	if sw == 0 {
		return c, draw.Canvas{}
	}
	sw += 2 * figPad
	panels, strip = c, c
	panels.Max.X -= sw
	strip.Min.X = panels.Max.X + figPad
	strip.Max.X -= figPad
	return panels, strip
}

// layout places the figure's parts on c.
func (f *figure) layout(c draw.Canvas) (figLayout, [][]draw.Canvas, draw.Canvas, draw.Canvas) {
	var out figLayout
	pc, strip := f.split(c)
	rows := len(f.Panels)
	cols := 0
	for _, r := range f.Panels {
		cols = max(cols, len(r))
	}
	tiles := draw.Tiles{Rows: rows, Cols: cols, PadX: 4 * vg.Millimeter, PadY: 3 * vg.Millimeter, PadTop: figPad,
		PadBottom: figPad, PadLeft: figPad, PadRight: figPad}
	cs := plot.Align(f.Panels, tiles, pc)
	top := pc.Max.Y
	for i, r := range f.Panels {
		out.Data = append(out.Data, make([]vg.Rectangle, len(r)))
		for j, p := range r {
			if p == nil {
				continue
			}
			d := p.DataCanvas(cs[i][j])
			out.Data[i][j] = d.Rectangle
			if i == 0 && j == 0 {
				top = d.Max.Y
			}
		}
	}
	var bar, leg draw.Canvas
	y := top
	if f.Bar != nil {
		bar = strip
		bar.Max.Y = top
		bar.Min.Y = max(strip.Min.Y, top-3.5*vg.Inch)
		if len(f.Legend) > 0 {
			bar.Min.Y = max(strip.Min.Y, top-(top-strip.Min.Y)*0.7)
		}
		out.Bar = bar.Rectangle
		y = bar.Min.Y - 2*figPad
	}
	if lw, lh := f.legendSize(); lw > 0 {
		leg = strip
		leg.Max.Y = y
		leg.Max.X = strip.Min.X + lw
		leg.Min.Y = y - lh
		out.Legend = leg.Rectangle
	}
	return out, cs, bar, leg
}

// draw draws the figure on c.
func (f *figure) draw(c draw.Canvas) {
	_, cs, bar, leg := f.layout(c)
	for i, r := range f.Panels {
		for j, p := range r {
			if p != nil {
				p.Draw(cs[i][j])
			}
		}
	}
	if f.Bar != nil {
		bp := plot.New()
		cb := &plotter.ColorBar{ColorMap: f.Bar.Map, Vertical: true}
		bp.Add(cb)
		bp.HideX()
		bp.Y.Label.Text = f.Bar.Label
		bp.Y.Padding = 0
		bp.Y.Min, bp.Y.Max = f.Bar.Map.Min(), f.Bar.Map.Max()
		bp.Draw(bar)
	}
	if len(f.Legend) > 0 {
		l := legendStyle()
		if f.LegendTitle != "" {
			l.Add(f.LegendTitle)
		}
		for _, e := range f.Legend {
			l.Add(e.Name, e.Thumbs...)
		}
		l.Draw(leg)
	}
}

// png draws the figure and returns the PNG bytes.
func (f *figure) png() ([]byte, error) {
	c := vgimg.PngCanvas{Canvas: vgimg.New(f.W, f.H)}
	f.draw(draw.New(c))
	var buf bytes.Buffer
	if _, err := c.WriteTo(&buf); err != nil {
		return nil, fmt.Errorf("rendering plot: %w", err)
	}
	return buf.Bytes(), nil
}

// single is a figure of one plot.
func single(p *plot.Plot, w, h vg.Length) *figure {
	return &figure{W: w, H: h, Panels: [][]*plot.Plot{{p}}}
}

// fromZero starts the axis at 0 when every value on it is non-negative:
// counts, ratios, rates, delays.
func fromZero(a *plot.Axis) {
	if a.Min >= 0 && !math.IsInf(a.Min, 0) {
		a.Min = 0
	}
}

// lineStyles are the dash patterns of the series of a chart, in order,
// so that lines drawn on top of each other still tell apart.
var lineStyles = [][]vg.Length{
	nil,
	{vg.Points(6), vg.Points(3)},
	{vg.Points(2), vg.Points(2)},
	{vg.Points(8), vg.Points(3), vg.Points(2), vg.Points(3)},
	{vg.Points(12), vg.Points(4)},
}

// seriesStyle is the style of series i of n: a colour and a dash pattern
// of their own, and widths decreasing from the first, so that where lines
// coincide the one below still shows around the one above.
func seriesStyle(i, n int) draw.LineStyle {
	w := 1.5
	if n > 1 {
		w = 1.2 + 2.4*float64(n-1-i)/float64(n-1)
	}
	return draw.LineStyle{Color: palette(i), Width: vg.Points(w), Dashes: lineStyles[i%len(lineStyles)]}
}

// intTicks labels only whole numbers (node ids, indices).
type intTicks struct{}

// Ticks implements plot.Ticker.
func (intTicks) Ticks(lo, hi float64) []plot.Tick {
	var out []plot.Tick
	step := 1.0
	for (hi-lo)/step > 12 {
		step *= 2
		if (hi-lo)/step > 12 {
			step = step / 2 * 5
		}
	}
	for v := math.Ceil(lo/step) * step; v <= hi; v += step {
		out = append(out, plot.Tick{Value: v, Label: strconv.FormatFloat(v+0, 'f', 0, 64)})
	}
	return out
}

// gray is the colour of reference lines and obstacles.
var gray = color.Gray{Y: 200}
