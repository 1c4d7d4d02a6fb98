package mujoco

import (
	"bytes"
	"encoding/xml"
	"fmt"
	"math"
	"path/filepath"
	"strconv"
	"strings"

	"skyloop/geom"
)

// node is an MJCF element, kept as read.
type node struct {
	XMLName xml.Name
	Attrs   []xml.Attr `xml:",any,attr"`
	Nodes   []node     `xml:",any"`
}

func (n *node) attr(name string) (string, bool) {
	for _, a := range n.Attrs {
		if a.Name.Local == name {
			return a.Value, true
		}
	}
	return "", false
}

func (n *node) setAttr(name, v string) {
	for i := range n.Attrs {
		if n.Attrs[i].Name.Local == name {
			n.Attrs[i].Value = v
			return
		}
	}
	n.Attrs = append(n.Attrs, xml.Attr{Name: xml.Name{Local: name}, Value: v})
}

// RobotModel is one robot read from an MJCF file, to be put in a world as
// many times as there are vehicles: its bodies (with their joints, geoms
// and sites), actuators, sensors, tendons, equality constraints and
// contact pairs are copied for each, with every name prefixed; its
// compiler settings, defaults and assets are shared.
type RobotModel struct {
	// Path is the file it was read from.
	Path string
	head []node // compiler, default, asset
	// per robot, by section
	bodies   []node
	sections map[string][]node
}

// perRobot are the top-level sections copied for every robot, in the order
// they are written.
var perRobot = []string{"tendon", "equality", "contact", "actuator", "sensor"}

// refAttrs are the attributes that name another element of the robot.
var refAttrs = map[string]bool{
	"name": true, "joint": true, "joint1": true, "joint2": true, "body": true, "body1": true, "body2": true,
	"site": true, "tendon": true, "tendon1": true, "tendon2": true, "geom": true, "geom1": true, "geom2": true,
	"actuator": true, "objname": true, "refname": true, "target": true, "jointinparent": true,
	"cranksite": true, "slidersite": true, "refsite": true,
}

// ParseRobot reads a robot's MJCF text b, from the file at path (named in
// errors as given) in directory dir (absolute: asset paths are made
// absolute from it, so that MuJoCo finds them wherever the world's model
// is written). It reads no file: the library's ReadRobot reads the file and
// checks the assets it names (Assets).
func ParseRobot(path, dir string, b []byte) (*RobotModel, error) {
	var root node
	if err := xml.Unmarshal(b, &root); err != nil {
		return nil, fmt.Errorf("%s: not MJCF XML: %w", path, err)
	}
	if root.XMLName.Local != "mujoco" {
		return nil, fmt.Errorf("%s: the root element is <%s>, want <mujoco>", path, root.XMLName.Local)
	}
	r := &RobotModel{Path: path, sections: map[string][]node{}}
	hasCompiler := false
	for _, n := range root.Nodes {
		switch s := n.XMLName.Local; s {
		case "compiler":
			hasCompiler = true
			// Assets are found next to the robot's file, wherever the
			// world's model is written.
			for _, k := range []string{"meshdir", "texturedir", "assetdir"} {
				if v, ok := n.attr(k); ok && !filepath.IsAbs(v) {
					n.setAttr(k, filepath.Join(dir, v))
				}
			}
			// assetdir stands for both where the others are not set
			// (as in MuJoCo).
			base := dir
			if v, ok := n.attr("assetdir"); ok {
				base = v
			}
			if _, ok := n.attr("meshdir"); !ok {
				n.setAttr("meshdir", base)
			}
			if _, ok := n.attr("texturedir"); !ok {
				n.setAttr("texturedir", base)
			}
			r.head = append(r.head, n)
		case "default", "asset":
			r.head = append(r.head, n)
		case "worldbody":
			for _, c := range n.Nodes {
				if c.XMLName.Local == "body" {
					r.bodies = append(r.bodies, c)
				}
				// Top-level geoms, lights and cameras (a floor, say)
				// belong to the robot's own scene: the world has its
				// floor.
			}
		case "tendon", "equality", "contact", "actuator", "sensor":
			r.sections[s] = append(r.sections[s], n.Nodes...)
		case "include":
			return nil, fmt.Errorf("%s: <include> is not supported: put the robot in one file", path)
		case "option", "size", "visual", "statistic", "extension", "custom", "keyframe":
			// The world sets its own time step and options; keyframes
			// would not match the world's state vector.
		default:
			return nil, fmt.Errorf("%s: unknown MJCF section <%s>", path, s)
		}
	}
	if !hasCompiler {
		c := node{XMLName: xml.Name{Local: "compiler"}}
		c.setAttr("meshdir", dir)
		c.setAttr("texturedir", dir)
		r.head = append([]node{c}, r.head...)
	}
	if len(r.bodies) == 0 {
		return nil, fmt.Errorf("%s: no <body> in <worldbody>: nothing to simulate", path)
	}
	return r, nil
}

// Asset is an asset file a robot's model names (a mesh, a texture, a
// height field), which MuJoCo reads when the world is compiled.
type Asset struct {
	// Elem and Attr are the element and the attribute that name it
	// (mesh, file), and Value the name as written.
	Elem, Attr, Value string
	// Path is where MuJoCo looks for it: in meshdir for meshes, height
	// fields and skins, in texturedir for textures (strippath drops the
	// name's directories).
	Path string
}

// Assets returns the asset files the model names, in the order of the
// file.
func (r *RobotModel) Assets() []Asset {
	meshDir, texDir, strip := "", "", false
	for i := range r.head {
		if c := &r.head[i]; c.XMLName.Local == "compiler" {
			meshDir, _ = c.attr("meshdir")
			texDir, _ = c.attr("texturedir")
			v, _ := c.attr("strippath")
			strip = v == "true"
		}
	}
	var out []Asset
	for i := range r.head {
		if r.head[i].XMLName.Local != "asset" {
			continue
		}
		for _, a := range r.head[i].Nodes {
			for _, at := range a.Attrs {
				if !strings.HasPrefix(at.Name.Local, "file") || at.Value == "" {
					continue
				}
				name := at.Value
				if strip {
					name = filepath.Base(name)
				}
				if !filepath.IsAbs(name) {
					d := meshDir
					if a.XMLName.Local == "texture" {
						d = texDir
					}
					name = filepath.Join(d, name)
				}
				out = append(out, Asset{Elem: a.XMLName.Local, Attr: at.Name.Local, Value: at.Value, Path: name})
			}
		}
	}
	return out
}

// HasBody reports whether the model has a body of that name.
func (r *RobotModel) HasBody(name string) bool {
	var find func(ns []node) bool
	find = func(ns []node) bool {
		for i := range ns {
			if ns[i].XMLName.Local == "body" {
				if v, _ := ns[i].attr("name"); v == name {
					return true
				}
			}
			if find(ns[i].Nodes) {
				return true
			}
		}
		return false
	}
	return find(r.bodies)
}

// HasActuator reports whether the model has an actuator of that name.
func (r *RobotModel) HasActuator(name string) bool {
	for _, n := range r.sections["actuator"] {
		if v, _ := n.attr("name"); v == name {
			return true
		}
	}
	return false
}

// Head returns the shared sections (compiler, defaults, assets).
func (r *RobotModel) Head() string { return marshal(r.head) }

// Instance returns one copy of the robot for the world: every name
// prefixed, the top-level bodies moved by pos and turned by yaw about z;
// its bodies, its actuators, and its other sections (tendons, equality
// constraints, contact pairs, sensors) as whole elements. A top-level body
// with its own orientation can only be spawned at yaw 0.
func (r *RobotModel) Instance(prefix string, pos geom.Vec3, yaw float64) (bodies, actuators, others string, err error) {
	bs := make([]node, len(r.bodies))
	c, s := math.Cos(yaw), math.Sin(yaw)
	for i := range r.bodies {
		b := clone(r.bodies[i], prefix)
		p := geom.Vec3{}
		if v, ok := b.attr("pos"); ok {
			if p, err = parseVec(v); err != nil {
				return "", "", "", fmt.Errorf("%s: body %q: pos: %w", r.Path, r.bodyName(i), err)
			}
		}
		b.setAttr("pos", Vec(pos.X+c*p.X-s*p.Y, pos.Y+s*p.X+c*p.Y, pos.Z+p.Z))
		if yaw != 0 {
			for _, k := range []string{"quat", "euler", "axisangle", "xyaxes", "zaxis"} {
				if _, ok := b.attr(k); ok {
					return "", "", "", fmt.Errorf("%s: body %q sets its own orientation (%s): spawn it with yaw 0, or turn it in the model", r.Path, r.bodyName(i), k)
				}
			}
			b.setAttr("quat", Vec(math.Cos(yaw/2), 0, 0, math.Sin(yaw/2)))
		}
		bs[i] = b
	}
	var sb strings.Builder
	for _, sec := range perRobot {
		ns := r.sections[sec]
		if len(ns) == 0 {
			continue
		}
		cp := make([]node, len(ns))
		for i := range ns {
			cp[i] = clone(ns[i], prefix)
		}
		if sec == "actuator" {
			actuators = marshal(cp)
			continue
		}
		fmt.Fprintf(&sb, "  <%s>\n%s  </%s>\n", sec, marshal(cp), sec)
	}
	return marshal(bs), actuators, sb.String(), nil
}

func (r *RobotModel) bodyName(i int) string {
	v, _ := r.bodies[i].attr("name")
	return v
}

// clone copies n with the names and the references to names prefixed.
func clone(n node, prefix string) node {
	out := node{XMLName: n.XMLName, Attrs: make([]xml.Attr, len(n.Attrs)), Nodes: make([]node, len(n.Nodes))}
	for i, a := range n.Attrs {
		if refAttrs[a.Name.Local] && a.Value != "" {
			a.Value = prefix + a.Value
		}
		out.Attrs[i] = a
	}
	for i := range n.Nodes {
		out.Nodes[i] = clone(n.Nodes[i], prefix)
	}
	return out
}

func marshal(ns []node) string {
	var b bytes.Buffer
	for i := range ns {
		x, err := xml.Marshal(ns[i])
		if err != nil {
			// Elements read by encoding/xml marshal back.
			panic(fmt.Sprintf("internal error: MJCF element: %v", err))
		}
		b.Write(x)
		b.WriteByte('\n')
	}
	return b.String()
}

func parseVec(s string) (geom.Vec3, error) {
	f := strings.Fields(s)
	if len(f) != 3 {
		return geom.Vec3{}, fmt.Errorf("%q: want 3 numbers", s)
	}
	var v [3]float64
	for i := range f {
		x, err := strconv.ParseFloat(f[i], 64)
		if err != nil {
			return geom.Vec3{}, fmt.Errorf("%q: %w", s, err)
		}
		v[i] = x
	}
	return geom.Vec3{X: v[0], Y: v[1], Z: v[2]}, nil
}
