package plugin

// requestID scans the top level of a JSON-RPC message for its "id" and
// whether it has a "method", without decoding it: the transport tracks the
// requests in flight so that a crash can answer each of them at once.
//
// It never panics and never allocates; on input that is not a JSON object
// it reports no id.
func requestID(b []byte) (id []byte, hasMethod bool) {
	i := skipWS(b, 0)
	if i >= len(b) || b[i] != '{' {
		return nil, false
	}
	i++
	for {
		i = skipWS(b, i)
		if i >= len(b) || b[i] != '"' {
			return id, hasMethod
		}
		ks := i
		i = skipString(b, i)
		if i < 0 {
			return id, hasMethod
		}
		key := b[ks+1 : i-1]
		i = skipWS(b, i)
		if i >= len(b) || b[i] != ':' {
			return id, hasMethod
		}
		i = skipWS(b, i+1)
		vs := i
		i = skipValue(b, i)
		if i < 0 {
			return id, hasMethod
		}
		switch string(key) {
		case "id":
			id = b[vs:i]
		case "method":
			hasMethod = true
		}
		i = skipWS(b, i)
		if i >= len(b) || b[i] != ',' {
			return id, hasMethod
		}
		i++
	}
}

func skipWS(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\t' || b[i] == '\n' || b[i] == '\r') {
		i++
	}
	return i
}

// skipString returns the index after the string starting at b[i] (a quote),
// or -1 if it does not end.
func skipString(b []byte, i int) int {
	for i++; i < len(b); i++ {
		switch b[i] {
		case '\\':
			i++
		case '"':
			return i + 1
		}
	}
	return -1
}

// skipValue returns the index after the value at b[i], or -1.
func skipValue(b []byte, i int) int {
	if i >= len(b) {
		return -1
	}
	switch b[i] {
	case '"':
		return skipString(b, i)
	case '{', '[':
		depth := 0
		for ; i < len(b); i++ {
			switch b[i] {
			case '"':
				i = skipString(b, i)
				if i < 0 {
					return -1
				}
				i--
			case '{', '[':
				depth++
			case '}', ']':
				depth--
				if depth == 0 {
					return i + 1
				}
			}
		}
		return -1
	default:
		s := i
		for i < len(b) && b[i] != ',' && b[i] != '}' && b[i] != ']' && b[i] != ' ' && b[i] != '\t' && b[i] != '\n' && b[i] != '\r' {
			i++
		}
		if i == s {
			return -1
		}
		return i
	}
}
