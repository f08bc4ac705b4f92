package suggest

import "sort"

// near reports whether an edit distance d from s is close enough to
// suggest: at most 2, or a third of s for longer names.
func near(s string, d int) bool { return d <= max(2, len([]rune(s))/3) }

// Nearest is the closest of names to s, if it is close; "" if none is.
// Of names equally close, the first wins.
func Nearest(s string, names []string) string {
	best, bestD := "", 1<<30
	for _, n := range names {
		if d := Distance(s, n); d < bestD {
			best, bestD = n, d
		}
	}
	if near(s, bestD) {
		return best
	}
	return ""
}

// Ranked is up to three candidates close to s, nearest first (ties by
// name). Each candidate is a list of the names it goes by (a tool's
// exposed name and its server.tool, say): it is close if any of them is,
// and said by its first.
func Ranked(s string, cands [][]string) []string {
	type cand struct {
		s string
		d int
	}
	var cs []cand
	for _, c := range cands {
		for _, n := range c {
			if d := Distance(s, n); near(s, d) {
				cs = append(cs, cand{c[0], d})
				break
			}
		}
	}
	sort.Slice(cs, func(i, j int) bool { return cs[i].d < cs[j].d || cs[i].d == cs[j].d && cs[i].s < cs[j].s })
	out := make([]string, 0, min(3, len(cs)))
	for _, c := range cs[:min(3, len(cs))] {
		out = append(out, c.s)
	}
	return out
}

// Distance is the optimal string alignment distance between a and b, in
// characters: Levenshtein, with a swap of two neighbours ("evn" for "env")
// as one edit, since that is the commonest typo.
func Distance(a, b string) int {
	ra, rb := []rune(a), []rune(b)
	// Three rows of the matrix: the one before the previous (for swaps),
	// the previous and the current.
	pp := make([]int, len(rb)+1)
	prev := make([]int, len(rb)+1)
	cur := make([]int, len(rb)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(ra); i++ {
		cur[0] = i
		for j := 1; j <= len(rb); j++ {
			cost := 1
			if ra[i-1] == rb[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
			if i > 1 && j > 1 && ra[i-1] == rb[j-2] && ra[i-2] == rb[j-1] {
				cur[j] = min(cur[j], pp[j-2]+1)
			}
		}
		pp, prev, cur = prev, cur, pp
	}
	return prev[len(rb)]
}
