package report

import (
	"regexp"
	"strconv"
	"strings"
	"time"
)

// wifiMode matches ns-3's Wi-Fi mode names: DsssRate5_5Mbps,
// OfdmRate6Mbps, ErpOfdmRate54Mbps, ...
var wifiMode = regexp.MustCompile(`^[A-Za-z]*Rate([0-9]+)(?:_([0-9]+))?Mbps(?:BW[0-9]+MHz)?$`)

// Human returns a configuration value as a reader would write it: a
// Wi-Fi mode as its rate ("DsssRate5_5Mbps" is "5.5 Mbit/s"), a number
// without trailing zeros ("1000.00" is "1000"), a duration with a space
// before its unit ("200ms" is "200 ms"), true and false as on and off;
// anything else as it is.
func Human(v string) string {
	if m := wifiMode.FindStringSubmatch(v); m != nil {
		r := m[1]
		if m[2] != "" {
			r += "." + m[2]
		}
		return r + " Mbit/s"
	}
	switch v {
	case "true":
		return "on"
	case "false":
		return "off"
	}
	if f, err := strconv.ParseFloat(v, 64); err == nil && strings.TrimSpace(v) == v {
		return strconv.FormatFloat(f, 'f', -1, 64)
	}
	if x, unit, ok := Quantity(v); ok && unit != "" {
		return strconv.FormatFloat(x, 'f', -1, 64) + " " + unit
	}
	return v
}

// Quantity parses a swept value as a number in a unit: a duration in the
// unit it is written in ("50ms" is 50, "ms"; "1.5s" is 1.5, "s"), or a
// plain number (unit ""). ok is false for anything else.
func Quantity(v string) (x float64, unit string, ok bool) {
	if f, err := strconv.ParseFloat(v, 64); err == nil {
		return f, "", true
	}
	d, err := time.ParseDuration(v)
	if err != nil {
		return 0, "", false
	}
	// One unit after the number ("200ms"): in that unit; else ("1m30s")
	// in seconds.
	k := strings.LastIndexAny(v, "0123456789.") + 1
	if u, ok := durationUnits[v[k:]]; ok && !strings.ContainsAny(v[:k], "nuµmsh") {
		name := v[k:]
		if name == "us" {
			name = "µs"
		}
		return float64(d) / float64(u), name, true
	}
	return d.Seconds(), "s", true
}

// Quantities parses every value with Quantity and puts them in one unit
// (that of the first duration: "500us" and "2ms" are 0.5 and 2 ms); ok
// is false unless every value is a number, or every value a duration.
func Quantities(vs []string) (xs []float64, unit string, ok bool) {
	if len(vs) == 0 {
		return nil, "", false
	}
	_, unit, ok = Quantity(vs[0])
	if !ok {
		return nil, "", false
	}
	for _, v := range vs {
		x, u, ok := Quantity(v)
		if !ok || (u == "") != (unit == "") {
			return nil, "", false
		}
		if u != unit {
			x = x * float64(durationUnits[u]) / float64(durationUnits[unit])
		}
		xs = append(xs, x)
	}
	return xs, unit, true
}

var durationUnits = map[string]time.Duration{"ns": time.Nanosecond, "us": time.Microsecond, "µs": time.Microsecond,
	"ms": time.Millisecond, "s": time.Second, "m": time.Minute, "h": time.Hour}
