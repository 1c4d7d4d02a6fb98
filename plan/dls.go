package plan

// DLS returns the coverage path of a depth-limited search with
// backtracking, the baseline TurnAware is compared with: from the start it
// moves to a free unvisited 4-neighbour (straight on first, then left,
// right, back), and when it has none it flies back over the path to the
// last cell that has one; depth is the most cells the search goes deep
// (0: no limit). The path includes the cells flown back over; cells the
// search cannot reach are not covered.
func DLS(g *Grid, start Cell, depth int) (Plan, error) {
	if err := g.Validate(start); err != nil {
		return Plan{}, err
	}
	if depth <= 0 {
		depth = g.Cols * g.Rows
	}
	visited := map[Cell]bool{start: true}
	path := []Cell{start}
	stack := []Cell{start}
	dir := Cell{1, 0} // heading east
	for len(stack) > 0 {
		cur := stack[len(stack)-1]
		var next Cell
		found := false
		if len(stack) <= depth {
			left, right := Cell{-dir.Row, dir.Col}, Cell{dir.Row, -dir.Col}
			for _, d := range []Cell{dir, left, right, {-dir.Col, -dir.Row}} {
				c := Cell{cur.Col + d.Col, cur.Row + d.Row}
				if g.in(c) && !g.Blocked[c] && !visited[c] {
					next, dir, found = c, d, true
					break
				}
			}
		}
		if found {
			visited[next] = true
			stack = append(stack, next)
			path = append(path, next)
			continue
		}
		// Back up one cell, flying over it again, unless this was the
		// last: the search ends where it is.
		stack = stack[:len(stack)-1]
		if len(stack) == 0 || !hasUnvisited(g, stack, visited, depth) {
			break
		}
		back := stack[len(stack)-1]
		dir = Cell{back.Col - cur.Col, back.Row - cur.Row}
		path = append(path, back)
	}
	return Evaluate(g, path), nil
}

// hasUnvisited reports whether some cell on the stack still has a free
// unvisited neighbour within the depth limit.
func hasUnvisited(g *Grid, stack []Cell, visited map[Cell]bool, depth int) bool {
	for i, c := range stack {
		if i+1 > depth {
			break
		}
		for _, d := range []Cell{{1, 0}, {-1, 0}, {0, 1}, {0, -1}} {
			n := Cell{c.Col + d.Col, c.Row + d.Row}
			if g.in(n) && !g.Blocked[n] && !visited[n] {
				return true
			}
		}
	}
	return false
}
