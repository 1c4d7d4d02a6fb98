package plan

// DLS returns the coverage path of a depth-limited search with
// backtracking, the baseline TurnAware is compared with: from the start it
// moves to a free unvisited 4-neighbour (straight on first, then left,
// right, back); when it has none, it backtracks as a depth-first search
// does, to the latest cell of its stack that has one, but flies from
// where it is straight to that neighbour, the next cell the search visits,
// by the shortest route clear of the obstacles (a straight leg where it is
// clear), instead of back over the stack cell by cell. depth is the most
// cells the stack goes deep (0: no limit). A Closed tour then flies back
// to the start the same way. Cells the search cannot reach are not
// covered.
func DLS(g *Grid, start Cell, depth int, tour Tour) (Plan, error) {
	if err := g.Validate(start); err != nil {
		return Plan{}, err
	}
	if err := tour.valid(); err != nil {
		return Plan{}, err
	}
	if depth <= 0 {
		depth = g.Cols * g.Rows
	}
	visited := map[Cell]bool{start: true}
	path := []Cell{start}
	stack := []Cell{start}
	dir := Cell{1, 0} // heading east
	for {
		cur := stack[len(stack)-1]
		if next, d, ok := g.unvisitedNeighbour(cur, dir, visited); ok && len(stack) <= depth {
			visited[next] = true
			stack = append(stack, next)
			path = append(path, next)
			dir = d
			continue
		}
		// Backtrack: the latest stack cell within the depth limit that
		// has a free unvisited neighbour; the search is over when none
		// has.
		k := min(len(stack), depth) - 1
		var next, d Cell
		found := false
		for ; k >= 0; k-- {
			// The heading the search had on entering the cell.
			back, dir := stack[k], Cell{1, 0}
			if k > 0 {
				dir = Cell{back.Col - stack[k-1].Col, back.Row - stack[k-1].Row}
			}
			if next, d, found = g.unvisitedNeighbour(back, dir, visited); found {
				break
			}
		}
		if !found {
			break
		}
		path = append(path, g.route(path[len(path)-1], next)...)
		visited[next] = true
		stack = append(stack[:k+1], next)
		dir = d
	}
	if tour == Closed && len(path) > 1 {
		path = append(path, g.route(path[len(path)-1], start)...)
	}
	return Evaluate(g, path), nil
}

// unvisitedNeighbour returns the first free unvisited 4-neighbour of c,
// heading dir: straight on, then left, right and back, and the step to it.
func (g *Grid) unvisitedNeighbour(c, dir Cell, visited map[Cell]bool) (Cell, Cell, bool) {
	left, right := Cell{-dir.Row, dir.Col}, Cell{dir.Row, -dir.Col}
	for _, d := range [4]Cell{dir, left, right, {-dir.Col, -dir.Row}} {
		n := Cell{c.Col + d.Col, c.Row + d.Row}
		if g.in(n) && !g.Blocked[n] && !visited[n] {
			return n, d, true
		}
	}
	return Cell{}, Cell{}, false
}

// route returns the cells after a that a flight from a to b turns at,
// ending with b: b alone when the straight leg is clear, else the shortest
// route of clear steps between neighbouring cells, straightened. b must be
// reachable from a.
func (g *Grid) route(a, b Cell) []Cell {
	if g.Clear(a, b) {
		return []Cell{b}
	}
	return g.straighten(g.routes(a)[b])[1:]
}
