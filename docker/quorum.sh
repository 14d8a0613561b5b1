#!/bin/sh
# The `quorum` service: waits until the controllers have a leader and every broker is
# registered, prints `kraft quorum describe` and `kraft cluster info`, then stays up (so
# `docker compose up quorum` keeps the cluster running until Ctrl-C or `docker compose down`).
#   env: KRAFT_CONTROLLERS (host:port,...), KRAFT_BOOTSTRAP (brokers), KRAFT_BROKER_COUNT
# A secure cluster (docker-compose.secure.yml) also sets KRAFT_NODE_COMMAND_CONFIG (the admin's
# certificate, for the controllers and the brokers' mTLS listeners KRAFT_INTERNAL_BOOTSTRAP) and
# KRAFT_COMMAND_CONFIG (the admin's SASL_SSL settings): the admin's SCRAM user is created with the
# certificate, then every broker is asked over SASL_SSL with the password.
set -eu
: "${KRAFT_CONTROLLERS:?}" "${KRAFT_BOOTSTRAP:?}" "${KRAFT_BROKER_COUNT:?}"
trap 'exit 0' TERM INT
node_config=${KRAFT_NODE_COMMAND_CONFIG:-}
nodes_bootstrap=${KRAFT_INTERNAL_BOOTSTRAP:-$KRAFT_BOOTSTRAP}
deadline=$(( $(date +%s) + ${KRAFT_WAIT_TIMEOUT:-300} ))

# as_node CMD...: CMD with the nodes' command config (the admin's certificate), if any.
as_node() {
    if [ -n "$node_config" ]; then KRAFT_COMMAND_CONFIG=$node_config "$@"; else "$@"; fi
}

check_deadline() {
    if [ "$(date +%s)" -ge "$deadline" ]; then
        echo "the cluster is not ready after ${KRAFT_WAIT_TIMEOUT:-300} s: $1" >&2
        exit 1
    fi
    sleep 1
}

echo "waiting for a quorum leader and $KRAFT_BROKER_COUNT registered brokers"
until status=$(as_node kraft-healthcheck cluster "$KRAFT_CONTROLLERS" "$nodes_bootstrap" "$KRAFT_BROKER_COUNT" 2>&1); do
    check_deadline "$status"
done
echo "$status"

if [ -n "$node_config" ]; then
    user=$(sed -n 's/^sasl.username=//p' "$KRAFT_COMMAND_CONFIG")
    echo "creating the SCRAM user $user through ${nodes_bootstrap%%,*} (the admin's certificate)"
    sed -n 's/^sasl.password=//p' "$KRAFT_COMMAND_CONFIG" | as_node kraft user add "$user" \
        --password-stdin --bootstrap-server "$nodes_bootstrap"
    # Each broker replays the credential from its metadata log: ask each one with the password.
    for broker in $(echo "$KRAFT_BOOTSTRAP" | tr ',' ' '); do
        until out=$(kraft cluster info --bootstrap-server "$broker" 2>&1); do
            check_deadline "$broker refuses $user's password: $out"
        done
    done
    echo
    echo "\$ kraft quorum describe --bootstrap-controller $KRAFT_CONTROLLERS --command-config $node_config"
else
    echo
    echo "\$ kraft quorum describe --bootstrap-controller $KRAFT_CONTROLLERS"
fi
as_node kraft quorum describe --bootstrap-controller "$KRAFT_CONTROLLERS"
echo
echo "\$ kraft cluster info --bootstrap-server $KRAFT_BOOTSTRAP${KRAFT_COMMAND_CONFIG:+ --command-config $KRAFT_COMMAND_CONFIG}"
kraft cluster info --bootstrap-server "$KRAFT_BOOTSTRAP"
echo
echo "cluster ready; stop it with: docker compose down (add -v to delete its volumes)"
touch /tmp/ready
sleep infinity &
wait $!
