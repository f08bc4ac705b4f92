package console

import (
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"net/http"
	"strconv"
	"sync"
	"time"
)

// Access: a person logs in with a token from the console block; the
// console then knows them by a random session id in a cookie (HttpOnly,
// SameSite=Strict, Secure but on a plain-HTTP loopback console). Every
// change is a POST that carries the session's CSRF token and an Origin
// that is the console's own.

type role int

const (
	roleRead role = iota + 1
	roleAdmin
)

func (r role) String() string {
	if r == roleAdmin {
		return "admin"
	}
	return "read-only"
}

// Bounds of the logins kept.
const (
	cookieName   = "nexus_console"
	loginTTL     = 8 * time.Hour
	maxLogins    = 1024
	maxFailures  = 20 // failed logins per failWindow, for all comers
	failWindow   = time.Minute
	maxFormBytes = 8 << 10
)

// login is one person's session.
type login struct {
	who     string // "admin token 1": which token, never the token
	role    role
	csrf    string
	expires time.Time
}

type logins struct {
	mu       sync.Mutex
	m        map[string]*login
	failures int
	window   time.Time
}

func (l *logins) init() { l.m = map[string]*login{} }

func randomID() string {
	b := make([]byte, 32)
	rand.Read(b)
	return hex.EncodeToString(b)
}

// add starts a session; false when maxLogins are live.
func (l *logins) add(who string, r role) (id string, ok bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	now := time.Now()
	if len(l.m) >= maxLogins {
		for id, s := range l.m {
			if now.After(s.expires) {
				delete(l.m, id)
			}
		}
		if len(l.m) >= maxLogins {
			return "", false
		}
	}
	id = randomID()
	l.m[id] = &login{who: who, role: r, csrf: randomID(), expires: now.Add(loginTTL)}
	return id, true
}

func (l *logins) get(id string) *login {
	l.mu.Lock()
	defer l.mu.Unlock()
	s := l.m[id]
	if s != nil && time.Now().After(s.expires) {
		delete(l.m, id)
		return nil
	}
	return s
}

func (l *logins) end(id string) {
	l.mu.Lock()
	delete(l.m, id)
	l.mu.Unlock()
}

// failed counts a failed login and says whether logins are still open:
// after maxFailures in a window, every login waits for the next window,
// so tokens cannot be tried at speed.
func (l *logins) failed() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.tick()
	l.failures++
}

func (l *logins) open() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.tick()
	return l.failures < maxFailures
}

func (l *logins) tick() {
	if now := time.Now(); now.Sub(l.window) > failWindow {
		l.window, l.failures = now, 0
	}
}

// match finds the token among the configured ones, in time that does not
// depend on where they differ.
func (k *Console) match(token string) (string, role) {
	got := sha256.Sum256([]byte(token))
	who, r := "", role(0)
	check := func(list []string, as role, name string) {
		for i, t := range list {
			want := sha256.Sum256([]byte(t))
			if subtle.ConstantTimeCompare(got[:], want[:]) == 1 && r == 0 {
				who, r = name+" token "+strconv.Itoa(i+1), as
			}
		}
	}
	check(k.c.Tokens, roleAdmin, "admin")
	check(k.c.ReadOnly, roleRead, "read-only")
	return who, r
}

// session is the request's login, or nil.
func (k *Console) session(r *http.Request) (string, *login) {
	c, err := r.Cookie(cookieName)
	if err != nil || len(c.Value) != 64 {
		return "", nil
	}
	return c.Value, k.logins.get(c.Value)
}

func (k *Console) setCookie(w http.ResponseWriter, value string, maxAge int) {
	http.SetCookie(w, &http.Cookie{Name: cookieName, Value: value, Path: "/", MaxAge: maxAge,
		HttpOnly: true, Secure: k.secure(), SameSite: http.SameSiteStrictMode})
}

// sameOrigin checks a change's Origin (and Fetch metadata, where the
// browser sends it) against the console's own origin.
func (k *Console) sameOrigin(r *http.Request) bool {
	if site := r.Header.Get("Sec-Fetch-Site"); site != "" && site != "same-origin" {
		return false
	}
	scheme := "http"
	if r.TLS != nil {
		scheme = "https"
	}
	return r.Header.Get("Origin") == scheme+"://"+r.Host
}

func (k *Console) loginPage(w http.ResponseWriter, r *http.Request) {
	k.render(w, r, http.StatusOK, "login", nil, k.loginData(""))
}

func (k *Console) login(w http.ResponseWriter, r *http.Request) {
	if !k.sameOrigin(r) {
		k.refuse(w, r, http.StatusForbidden, "This login did not come from the console's own page (its Origin is another site's, or missing): open the console and log in there.")
		return
	}
	if !k.logins.open() {
		k.refuse(w, r, http.StatusTooManyRequests, "Too many failed logins in the last minute; wait a minute and try again.")
		return
	}
	r.Body = http.MaxBytesReader(w, r.Body, maxFormBytes)
	token := r.PostFormValue("token")
	who, as := k.match(token)
	if as == 0 {
		k.logins.failed()
		k.log.Warn("console: a login with an unknown token was refused", "remote", r.RemoteAddr)
		k.render(w, r, http.StatusUnauthorized, "login", nil, k.loginData("That token is not one of the console's. Check it, or ask whoever runs the gateway for one."))
		return
	}
	id, ok := k.logins.add(who, as)
	if !ok {
		k.refuse(w, r, http.StatusServiceUnavailable, "The console has as many logins as it keeps; try again once some have expired (they last 8 hours).")
		return
	}
	k.log.Info("console: login", "who", who, "role", as.String(), "remote", r.RemoteAddr)
	k.setCookie(w, id, int(loginTTL/time.Second))
	http.Redirect(w, r, "/", http.StatusSeeOther)
}

func (k *Console) logout(w http.ResponseWriter, r *http.Request, id string, _ *login) {
	k.logins.end(id)
	k.setCookie(w, "", -1)
	http.Redirect(w, r, "/login", http.StatusSeeOther)
}

// auth serves h to a logged-in person; others go to the login page.
func (k *Console) auth(h func(w http.ResponseWriter, r *http.Request, s *login)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		_, s := k.session(r)
		if s == nil {
			http.Redirect(w, r, "/login", http.StatusSeeOther)
			return
		}
		h(w, r, s)
	}
}

// change serves a POST that changes something: it must come from the
// console's own page (Origin), carry the session's CSRF token, and be
// made by a person whose role may.
func (k *Console) change(need role, h func(w http.ResponseWriter, r *http.Request, id string, s *login)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if !k.sameOrigin(r) {
			k.log.Warn("console: a cross-site change was refused", "path", r.URL.Path, "remote", r.RemoteAddr)
			k.refuse(w, r, http.StatusForbidden, "This change did not come from the console's own page (its Origin is another site's, or missing), so it was refused.")
			return
		}
		id, s := k.session(r)
		if s == nil {
			k.refuse(w, r, http.StatusUnauthorized, "You are not logged in (or your login expired); log in and try again.")
			return
		}
		r.Body = http.MaxBytesReader(w, r.Body, maxFormBytes)
		if got := r.PostFormValue("csrf"); subtle.ConstantTimeCompare([]byte(got), []byte(s.csrf)) != 1 {
			k.refuse(w, r, http.StatusForbidden, "This form is stale or was not made by the console (its CSRF token does not match your login); reload the page and try again.")
			return
		}
		if s.role < need {
			k.refuse(w, r, http.StatusForbidden, "Your login is "+s.role.String()+"; this change needs an admin token.")
			return
		}
		h(w, r, id, s)
	}
}
