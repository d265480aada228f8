#!/usr/bin/env bash
# Serve one class from several app servers behind nginx, with sticky sessions.
#
#   deploy/serve-class.sh N PORT [APP OPTIONS ...]
#
# starts N app servers (`streamlit run app.py`) on 127.0.0.1, ports PORT+1 ... PORT+N, and nginx
# on PORT in front of them (deploy/nginx.conf.template), in the foreground: Ctrl-C stops them
# all (so does nginx stopping; an app server that stops leaves its students to the others).
# APP OPTIONS go to every app server after `--` (for example `--models DIR`, `--allow-hub`: see
# README "Serving a class"). With `--redis redis://127.0.0.1:PORT/DB` the servers share their
# classes (a teacher's join code works on every replica) through that Redis; where nothing answers
# at such an address on this machine, this script starts Debian's redis-server there (in memory
# only, no file) and stops it at the end. Without --redis, each server keeps its own classes.
#
# Environment:
#   VITVIZ_LISTEN   the address nginx listens on (default 0.0.0.0: the students' machines);
#                   127.0.0.1 keeps the class on this machine (the tests do).
#                   Listening beyond this machine, the servers refuse hub downloads unless the
#                   options say --allow-hub (or VITVIZ_ALLOW_HUB=1): each app server listens on
#                   127.0.0.1 itself and would otherwise allow them as a private server does.
#   PYTHON          the Python with vitviz's requirements (default: python3 of the active venv)
#   VITVIZ_NGINX    the nginx binary (default: nginx on PATH, else /usr/sbin/nginx)
#   VITVIZ_SERVE_DIR  the folder for nginx's files and every server's log (default: a new
#                   temporary folder, removed at the end; a given one is kept). Its replicas.txt
#                   has a line per app server: the name its students' cookie gives it, its
#                   address and its process id.
#
# Needs Debian's nginx (`apt-get install -y nginx`); no root: nginx runs from its own folder.
set -euo pipefail

usage() {
  echo "usage: $0 N PORT [APP OPTIONS ...]   (N app servers on PORT+1..PORT+N, nginx on PORT)" >&2
  exit 2
}
[ $# -ge 2 ] || usage
replicas=$1
port=$2
shift 2
[[ $replicas =~ ^[1-9][0-9]?$ ]] || usage
[[ $port =~ ^[0-9]+$ ]] && [ "$port" -ge 1 ] && [ "$port" -le $((65535 - replicas)) ] || usage

root=$(cd "$(dirname "$0")/.." && pwd)
python=${PYTHON:-python3}
nginx=${VITVIZ_NGINX:-$(command -v nginx || echo /usr/sbin/nginx)}
listen=${VITVIZ_LISTEN:-0.0.0.0}
case $listen in
  0.0.0.0 | "[::]" | "*") here=127.0.0.1 ;;  # where this script asks nginx whether it is up
  *) here=$listen ;;
esac
[ -x "$nginx" ] || { echo "error: no nginx at $nginx: apt-get install -y nginx" >&2; exit 2; }

if [ -n "${VITVIZ_SERVE_DIR:-}" ]; then
  dir=$VITVIZ_SERVE_DIR
  mkdir -p "$dir"
  keep=1
else
  dir=$(mktemp -d "${TMPDIR:-/tmp}/vitviz-class.XXXXXX")
  keep=0
fi
mkdir -p "$dir/tmp"

pids=()
redis_pid=""
stop() {
  trap - EXIT INT TERM
  for pid in "${pids[@]}"; do kill -TERM "$pid" 2>/dev/null || true; done
  for pid in "${pids[@]}"; do wait "$pid" 2>/dev/null || true; done
  if [ -n "$redis_pid" ]; then kill -TERM "$redis_pid" 2>/dev/null || true; wait "$redis_pid" 2>/dev/null || true; fi
  [ "$keep" = 1 ] || rm -rf "$dir"
}
trap stop EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# The classes' Redis: started here when the options name one on this machine that is not running.
redis_url=""
previous=""
for option in "$@"; do
  case $option in --redis=*) redis_url=${option#--redis=} ;; esac
  [ "$previous" = --redis ] && redis_url=$option
  previous=$option
done
if [[ $redis_url =~ ^redis://(127\.0\.0\.1|localhost)(:([0-9]+))?(/[0-9]*)?$ ]]; then
  redis_port=${BASH_REMATCH[3]:-6379}
  if ! "$python" -c 'import socket, sys; sys.exit(socket.socket().connect_ex(("127.0.0.1", int(sys.argv[1]))) != 0)' "$redis_port"; then
    redis=${VITVIZ_REDIS_SERVER:-$(command -v redis-server || echo /usr/bin/redis-server)}
    [ -x "$redis" ] || { echo "error: no redis-server at $redis: apt-get install -y redis-server" >&2; exit 2; }
    "$redis" --port "$redis_port" --bind 127.0.0.1 --save '' --appendonly no --daemonize no >"$dir/redis.log" 2>&1 &
    redis_pid=$!
    for _ in $(seq 1 40); do
      "$python" -c 'import socket, sys; sys.exit(socket.socket().connect_ex(("127.0.0.1", int(sys.argv[1]))) != 0)' "$redis_port" && break
      sleep 0.25
    done
    echo "redis-server $redis_pid on 127.0.0.1:$redis_port" >"$dir/redis.txt"
  fi
fi

# Every server signs its cookies (the upload form's XSRF token) with one shared secret, so that a
# browser that fails over to another replica keeps working.
secret=$("$python" -c 'import secrets; print(secrets.token_hex(32))')
hub=()
case $listen in
  127.* | localhost | ::1 | "[::1]") ;;
  *) hub=(--no-hub) ;;  # the servers only see 127.0.0.1; the class reaches them from elsewhere
esac
for option in "$@"; do
  case $option in --allow-hub | --no-hub) hub=() ;; esac  # the teacher's choice wins
done
if [ "${VITVIZ_ALLOW_HUB:-}" != "" ]; then hub=(); fi

# Each replica's name in the cookie: random, so that a browser learns no address or port of this
# machine (nor how many replicas there are) from it. One upstream group per replica (the others as
# backups), the group for a new browser, the map from a browser's cookie to its replica's group,
# and the map from the address that answered (the last one tried) to its name.
read -ra tokens <<<"$("$python" -c 'import secrets, sys; print(*(secrets.token_hex(8) for _ in range(int(sys.argv[1]))))' "$replicas")"
{
  echo "upstream vitviz_new {"
  echo "    least_conn;"
  for i in $(seq 1 "$replicas"); do echo "    server 127.0.0.1:$((port + i));"; done
  echo "}"
  for i in $(seq 1 "$replicas"); do
    echo "upstream vitviz_$((port + i)) {"
    echo "    server 127.0.0.1:$((port + i));"
    for j in $(seq 1 "$replicas"); do
      [ "$j" = "$i" ] || echo "    server 127.0.0.1:$((port + j)) backup;"
    done
    echo "}"
  done
  echo "map \$cookie_vitviz_replica \$vitviz_upstream {"
  echo "    default vitviz_new;"
  for i in $(seq 1 "$replicas"); do echo "    ${tokens[i - 1]} vitviz_$((port + i));"; done
  echo "}"
  echo "map \$upstream_addr \$vitviz_replica {"
  echo "    default \"\";"
  for i in $(seq 1 "$replicas"); do echo "    \"~(^|, )127\\.0\\.0\\.1:$((port + i))\$\" ${tokens[i - 1]};"; done
  echo "}"
} >"$dir/replicas.conf"
sed "s/@LISTEN@/$listen:$port/" "$root/deploy/nginx.conf.template" >"$dir/nginx.conf"

cd "$root"
declare -A names
for i in $(seq 1 "$replicas"); do
  STREAMLIT_SERVER_COOKIE_SECRET=$secret STREAMLIT_BROWSER_GATHER_USAGE_STATS=false \
    "$python" -m streamlit run app.py --server.headless true --server.address 127.0.0.1 \
    --server.port $((port + i)) -- "${hub[@]}" "$@" >"$dir/replica-$((port + i)).log" 2>&1 &
  pids+=($!)
  names[$!]="127.0.0.1:$((port + i))"
  echo "${tokens[i - 1]} 127.0.0.1:$((port + i)) $!"
done >"$dir/replicas.txt"

healthy() {
  "$python" -c 'import sys, urllib.request
try:
    sys.exit(urllib.request.urlopen(sys.argv[1], timeout=2).read() != b"ok")
except OSError:
    sys.exit(1)' "$1"
}
for i in $(seq 1 "$replicas"); do
  for _ in $(seq 1 240); do
    healthy "http://127.0.0.1:$((port + i))/_stcore/health" && break
    for pid in "${pids[@]}"; do
      kill -0 "$pid" 2>/dev/null || { echo "error: an app server stopped; its log:" >&2; tail -n 20 "$dir"/replica-*.log >&2; exit 1; }
    done
    sleep 0.5
  done
  healthy "http://127.0.0.1:$((port + i))/_stcore/health" || { echo "error: 127.0.0.1:$((port + i)) did not start in 120 s" >&2; exit 1; }
done

# (nginx reads inherited sockets from a variable named NGINX: never hand it one)
env -u NGINX "$nginx" -p "$dir" -c "$dir/nginx.conf" -e "$dir/error.log" -g "daemon off;" &
pids+=($!)
names[$!]=nginx
for _ in $(seq 1 40); do
  healthy "http://$here:$port/_stcore/health" && break
  sleep 0.25
done
healthy "http://$here:$port/_stcore/health" || { echo "error: nginx did not answer on $port:" >&2; cat "$dir/error.log" >&2; exit 1; }

echo "serving a class: http://$listen:$port/ ($replicas app servers on 127.0.0.1:$((port + 1))-$((port + replicas)); logs in $dir)"
# An app server that stops leaves its students to the others (nginx's backups); nginx stopping,
# or the last app server, ends the class.
live=("${pids[@]}")
while :; do
  finished=""
  wait -n -p finished "${live[@]}" || true
  [ -n "$finished" ] || continue
  [ "${names[$finished]}" != nginx ] || { echo "nginx stopped: stopping the class" >&2; exit 1; }
  echo "the app server on ${names[$finished]} stopped: its students move to the others" >&2
  remaining=()
  for pid in "${live[@]}"; do [ "$pid" = "$finished" ] || remaining+=("$pid"); done
  live=("${remaining[@]}")
  [ "${#live[@]}" -gt 1 ] || { echo "no app server left: stopping the class" >&2; exit 1; }
done
