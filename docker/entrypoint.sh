#!/bin/sh
# The kraft image's entrypoint. `node` (the default command) runs one node configured from the
# environment; anything else runs as given (`docker compose run --rm client kraft topic list`).
#
# Every KRAFT_CFG_<KEY> variable becomes one server.properties line, the key lower-cased with
# `_` read as `.` (KRAFT_CFG_NODE_ID=1 -> node.id=1), `__` as `_` and `___` as `-`, as Kafka's
# images do with KAFKA_* (KRAFT_CFG_LISTENER_NAME_SASL__SSL_SSL_CLIENT_AUTH ->
# listener.name.sasl_ssl.ssl.client.auth). On the
# first start the node's log dirs are formatted for cluster KRAFT_CLUSTER_ID (required, the same
# on every node); later starts find meta.properties there and just run the node.
set -eu

if [ "${1:-node}" != node ]; then
    exec "$@"
fi
shift $(( $# > 0 ? 1 : 0 ))

: "${KRAFT_CLUSTER_ID:?set KRAFT_CLUSTER_ID to the cluster id, the same on every node}"
: "${KRAFT_CFG_NODE_ID:?set KRAFT_CFG_NODE_ID (node.id)}"
config=${KRAFT_CONFIG:-/etc/kraft/server.properties}
mkdir -p "$(dirname "$config")"

{
    echo "# written by the kraft image's entrypoint from KRAFT_CFG_* on every start"
    env | grep '^KRAFT_CFG_' | sort | while IFS='=' read -r name value; do
        key=$(echo "${name#KRAFT_CFG_}" | sed 's/___/-/g; s/__/@/g; s/_/./g; s/@/_/g' | tr 'A-Z' 'a-z')
        echo "$key=$value"
    done
} > "$config"

# --ignore-formatted: a restarted container finds its volume formatted and keeps its data.
kraft format --config "$config" --cluster-id "$KRAFT_CLUSTER_ID" --ignore-formatted
exec kraft node --config "$config" "$@"
