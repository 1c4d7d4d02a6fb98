package geom

import "math"

// EarthRadius is the mean Earth radius (m) used for local projections, as
// in PX4's map projection (CONSTANTS_RADIUS_OF_EARTH).
const EarthRadius = 6371000.0

// Geodetic is a WGS84 position: latitude and longitude in degrees,
// altitude above mean sea level in metres.
type Geodetic struct {
	Lat float64 `yaml:"lat" json:"lat"`
	Lon float64 `yaml:"lon" json:"lon"`
	Alt float64 `yaml:"alt" json:"alt"`
}

// Valid reports whether the latitude and longitude are in range and every
// value is finite.
func (g Geodetic) Valid() bool {
	return g.Lat >= -90 && g.Lat <= 90 && g.Lon >= -180 && g.Lon <= 180 && !math.IsNaN(g.Alt) && !math.IsInf(g.Alt, 0)
}

// ToGeodetic converts a local position (x east, y north, z up, metres from
// the origin g) to WGS84 with the azimuthal equidistant projection that PX4
// uses around its reference point: exact distances along great circles
// from the origin, errors below a centimetre within several kilometres.
func (g Geodetic) ToGeodetic(p Vec3) Geodetic {
	lat0, lon0 := g.Lat*math.Pi/180, g.Lon*math.Pi/180
	xn, ye := p.Y/EarthRadius, p.X/EarthRadius // north and east, radians of arc
	c := math.Sqrt(xn*xn + ye*ye)
	lat, lon := lat0, lon0
	if c > 0 {
		sinC, cosC := math.Sin(c), math.Cos(c)
		sin0, cos0 := math.Sin(lat0), math.Cos(lat0)
		lat = math.Asin(cosC*sin0 + xn*sinC*cos0/c)
		lon = lon0 + math.Atan2(ye*sinC, c*cos0*cosC-xn*sin0*sinC)
	}
	return Geodetic{Lat: lat * 180 / math.Pi, Lon: wrapDeg(lon * 180 / math.Pi), Alt: g.Alt + p.Z}
}

// ToLocal converts a WGS84 position to local coordinates around the origin
// g (x east, y north, z up); it inverts ToGeodetic.
func (g Geodetic) ToLocal(q Geodetic) Vec3 {
	lat0, lon0 := g.Lat*math.Pi/180, g.Lon*math.Pi/180
	lat, lon := q.Lat*math.Pi/180, q.Lon*math.Pi/180
	sin0, cos0 := math.Sin(lat0), math.Cos(lat0)
	sinL, cosL := math.Sin(lat), math.Cos(lat)
	cosD := math.Cos(lon - lon0)
	arg := math.Max(-1, math.Min(1, sin0*sinL+cos0*cosL*cosD))
	c := math.Acos(arg)
	k := 1.0
	if s := math.Sin(c); s > 0 {
		k = c / s
	}
	north := k * (cos0*sinL - sin0*cosL*cosD) * EarthRadius
	east := k * cosL * math.Sin(lon-lon0) * EarthRadius
	return V(east, north, q.Alt-g.Alt)
}

func wrapDeg(d float64) float64 {
	for d > 180 {
		d -= 360
	}
	for d < -180 {
		d += 360
	}
	return d
}

// ENUToNED converts a local east-north-up vector to north-east-down, the
// frame MAVLink and PX4 use.
func ENUToNED(p Vec3) Vec3 { return V(p.Y, p.X, -p.Z) }

// NEDToENU converts a north-east-down vector to east-north-up.
func NEDToENU(p Vec3) Vec3 { return V(p.Y, p.X, -p.Z) }

// YawToHeading converts a yaw (rad, counter-clockwise from east) to a
// compass heading (rad, clockwise from north) in [0, 2*pi).
func YawToHeading(yaw float64) float64 {
	h := math.Mod(math.Pi/2-yaw, 2*math.Pi)
	if h < 0 {
		h += 2 * math.Pi
	}
	return h
}

// HeadingToYaw converts a compass heading (rad, clockwise from north) to a
// yaw (rad, counter-clockwise from east) in (-pi, pi].
func HeadingToYaw(h float64) float64 {
	y := math.Mod(math.Pi/2-h, 2*math.Pi)
	if y > math.Pi {
		y -= 2 * math.Pi
	} else if y <= -math.Pi {
		y += 2 * math.Pi
	}
	return y
}
