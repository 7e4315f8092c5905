#!/usr/bin/env bash
# Soak test of a deployment (not in CI; several minutes): every role a
# separate process on loopback — a 3-node NATS JetStream cluster (Debian's
# nats-server, streams replicated R3, TLS and NKeys from 'shufflefl certs'),
# the analyzer with OPENERS opener processes, the front shuffler with SHARDS
# shuffler-shard processes, and CLIENTS client processes — runs ROUNDS
# rounds while a fault injector kills (kill -9) a random role every
# KILL_EVERY seconds (a kind of role uniformly, then one of that kind) and
# restarts it with the same command line and state.
#
#   scripts/soak.sh                      # 200 clients, 20 rounds, a kill a minute
#   CLIENTS=20 ROUNDS=3 KILL_EVERY=20 scripts/soak.sh
#
# It prints, and writes to $SOAK_DIR/soak.txt: rounds released, faults
# injected by role, reports the shuffler forwarded against reports the
# analyzer counted per released round (lost = their difference), every
# client's ledger against the released rounds it reported in, and each
# role's peak resident memory. SOAK_DIR (default a fresh temporary
# directory) keeps every log and database.
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
cd "$repo"
CLIENTS=${CLIENTS:-200} ROUNDS=${ROUNDS:-20} KILL_EVERY=${KILL_EVERY:-60}
SHARDS=${SHARDS:-2} OPENERS=${OPENERS:-2} PROTOCOL=${PROTOCOL:-ss-double}
DEADLINE=${DEADLINE:-5400} # seconds before the soak gives up
command -v nats-server >/dev/null || { echo "soak: needs nats-server (apt-get install nats-server)"; exit 2; }
go build -o bin/shufflefl ./cmd/shufflefl
bin=$repo/bin/shufflefl
dir=${SOAK_DIR:-$(mktemp -d "${TMPDIR:-/tmp}/soak.XXXXXX")}
mkdir -p "$dir/logs"
cd "$dir"
echo "soak: in $dir: $CLIENTS clients, $ROUNDS rounds of $PROTOCOL, $SHARDS shards, $OPENERS openers, a kill every ${KILL_EVERY}s"

port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
[ -d pki ] || "$bin" certs --out pki --clients "$CLIENTS" >/dev/null
cat > run.yaml <<EOF
protocol: $PROTOCOL
dataset: fashion-mnist-sample
model: logreg
clients: $CLIENTS
rounds: $ROUNDS
local-epochs: 1
seed: 11
EOF

# The engine: three nodes, each the deployment's users and TLS plus its own
# name, ports, store and routes.
declare -a NP RP
for i in 1 2 3; do NP[$i]=$(port); RP[$i]=$(port); done
urls="tls://127.0.0.1:${NP[1]},tls://127.0.0.1:${NP[2]},tls://127.0.0.1:${NP[3]}"
for i in 1 2 3; do
  routes=""
  for j in 1 2 3; do [ $j = $i ] || routes+="\"nats-route://127.0.0.1:${RP[$j]}\", "; done
  { grep -v '^jetstream: enabled' pki/nats/nats-server.conf
    cat <<EOF
server_name: n$i
listen: 127.0.0.1:${NP[$i]}
jetstream { store_dir: "$dir/n$i" }
cluster {
  name: soak
  listen: 127.0.0.1:${RP[$i]}
  routes: [ ${routes%, } ]
  tls { cert_file: "$dir/pki/nats.crt", key_file: "$dir/pki/nats.key", ca_file: "$dir/pki/ca.crt", verify: true, timeout: 5 }
}
EOF
  } > n$i.conf
done

an=127.0.0.1:$(port) pub=127.0.0.1:$(port) ctl=127.0.0.1:$(port)
nats="--nats $urls --nats-replicas 3"
declare -A CMD PID
CMD[n1]="nats-server -c n1.conf"
CMD[n2]="nats-server -c n2.conf"
CMD[n3]="nats-server -c n3.conf"
CMD[analyzer]="$bin analyzer --config run.yaml --certs pki --listen $an --shuffler-control $ctl --db analyzer.db --out out $nats --progress log"
CMD[shuffler]="$bin shuffler --config run.yaml --certs pki --listen $pub --control-listen $ctl --analyzer $an --db shuffler.db --shuffler-shards $SHARDS $nats"
for s in $(seq 1 "$SHARDS"); do
  CMD[shard$s]="$bin shuffler-shard --config run.yaml --certs pki --analyzer $an --shard-key pki/shard.key --index $s --shards $SHARDS --db shard-$s.db $nats"
done
for o in $(seq 1 "$OPENERS"); do
  CMD[opener$o]="$bin opener $nats --nats-ca pki/ca.crt --nats-seed pki/nats/opener.nk --key pki/analyzer-hpke.key --workers 1"
done
for c in $(seq 1 "$CLIENTS"); do
  id=$(printf 'client-%06d' "$c")
  CMD[$id]="$bin client --config run.yaml --certs pki --id $id --shuffler $pub --db $id.db"
done

start() { # start role $1, appending to its log
  # shellcheck disable=SC2086 # the command line, split into words
  ${CMD[$1]} >>"logs/$1.log" 2>&1 &
  PID[$1]=$!
}
stop_all() {
  for r in "${!PID[@]}"; do kill -9 "${PID[$r]}" 2>/dev/null || true; done
  wait 2>/dev/null || true
}
trap stop_all EXIT

declare -A PEAK KILLS
peak() { # the largest VmHWM (kB) seen for each kind of role
  for r in "${!PID[@]}"; do
    local kind=${r%%[0-9]*} kb
    kb=$(awk '/VmHWM/ {print $2}' "/proc/${PID[$r]}/status" 2>/dev/null || true)
    [ -n "$kb" ] && [ "$kb" -gt "${PEAK[$kind]:-0}" ] && PEAK[$kind]=$kb
  done
  return 0
}

for r in n1 n2 n3; do start $r; done
sleep 3
for r in "${!CMD[@]}"; do case $r in n[123]) ;; *) start "$r" ;; esac; done
begin=$(date +%s) next=$(( $(date +%s) + KILL_EVERY )) faults=0 tick=0
servers=(analyzer shuffler $(seq -f 'shard%g' 1 "$SHARDS") $(seq -f 'opener%g' 1 "$OPENERS") n1 n2 n3)
victim() { # a kind of role uniformly (client, analyzer, shuffler, shard, opener, NATS node), then one of its kind
  case $((RANDOM % 6)) in
  0) printf 'client-%06d' $((RANDOM % CLIENTS + 1)) ;;
  1) echo analyzer ;;
  2) echo shuffler ;;
  3) echo "shard$((RANDOM % SHARDS + 1))" ;;
  4) echo "opener$((RANDOM % OPENERS + 1))" ;;
  5) echo "n$((RANDOM % 3 + 1))" ;;
  esac
}
over() { grep -q "rounds, final test accuracy" logs/analyzer.log 2>/dev/null; }
while ! over; do
  now=$(date +%s)
  [ $((now - begin)) -gt "$DEADLINE" ] && { echo "soak: gave up after ${DEADLINE}s"; exit 1; }
  if [ "$now" -ge "$next" ]; then
    victim=$(victim)
    if kill -0 "${PID[$victim]}" 2>/dev/null; then
      kill -9 "${PID[$victim]}" 2>/dev/null || true
      wait "${PID[$victim]}" 2>/dev/null || true
      faults=$((faults + 1)) kind=${victim%%[0-9]*}
      KILLS[$kind]=$(( ${KILLS[$kind]:-0} + 1 ))
      echo "soak: $(date +%T) kill -9 $victim (fault $faults)"
      sleep 2
      start "$victim"
    fi
    next=$((now + KILL_EVERY))
  fi
  # A role that exited on its own before the end (not the clients, which
  # exit when the run is over) is restarted too.
  over && break
  for r in "${servers[@]}"; do
    if ! kill -0 "${PID[$r]}" 2>/dev/null; then
      echo "soak: $r exited ($(tail -1 "logs/$r.log")); restarting"
      start "$r"
    fi
  done
  tick=$((tick + 1))
  [ $((tick % 10)) = 1 ] && peak
  sleep 1
done
secs=$(( $(date +%s) - begin ))

{
  echo "soak: $CLIENTS clients, $ROUNDS rounds of $PROTOCOL over 3 NATS nodes (R3), $SHARDS shards, $OPENERS openers, in ${secs}s"
  echo "faults injected (kill -9, then restart): $faults — $(for k in "${!KILLS[@]}"; do printf '%s %s, ' "$k" "${KILLS[$k]}"; done)"
  grep "rounds, final test accuracy" logs/analyzer.log | tail -1
  released=$(sqlite3 analyzer.db "select group_concat(round, ' ') from round_log where status = 'released'")
  voided=$(sqlite3 analyzer.db "select count(*) from round_log where status = 'void'")
  echo "rounds released: $(wc -w <<<"$released") of $ROUNDS (void: $voided)"
  # Per released round: the reports the shuffler forwarded (its last
  # attempt) against the reports the analyzer counted.
  fwd_all=0 lost=0
  for t in $released; do
    fwd=$(grep -h "round $t forwarded:" logs/shuffler.log | tail -1 | sed -E 's/.*forwarded: ([0-9]+) reports.*/\1/')
    got=$(grep -h "analyzer: round $t: [0-9]* reports" logs/analyzer.log | tail -1 | sed -E 's/.*round [0-9]+: ([0-9]+) reports.*/\1/')
    fwd_all=$((fwd_all + ${fwd:-0})) lost=$((lost + ${fwd:-0} - ${got:-0}))
  done
  echo "reports forwarded in released rounds: $fwd_all; forwarded but not counted by the analyzer: $lost"
  # Every client's ledger: one charge per released round it reported in,
  # none for a round not released.
  charges=0 unreleased=0
  for c in $(seq 1 "$CLIENTS"); do
    id=$(printf 'client-%06d' "$c")
    for r in $(sqlite3 "$id.db" "select round from ledger_entry" 2>/dev/null); do
      charges=$((charges + 1))
      [[ " $released " == *" $r "* ]] || unreleased=$((unreleased + 1))
    done
  done
  echo "ledger charges: $charges (the analyzer counted $((fwd_all - lost)) reports); charges for rounds not released: $unreleased"
  echo "peak resident memory by role (MB): $(for k in "${!PEAK[@]}"; do printf '%s %d, ' "$k" $(( ${PEAK[$k]} / 1024 )); done)"
} | tee soak.txt
