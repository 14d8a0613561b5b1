#!/bin/sh
# `docker compose` where only Compose v1 (`docker-compose`, Debian bookworm's package) is
# installed: puts a small docker CLI plugin in ~/.docker/cli-plugins that runs docker-compose, so
# the README's `docker compose ...` commands work unchanged. Does nothing if `docker compose`
# already works or docker-compose is missing. (Compose v2 is not in Debian bookworm.)
set -eu

if docker compose version >/dev/null 2>&1; then
    exit 0
fi
v1=$(command -v docker-compose || true)
if [ -z "$v1" ]; then
    echo "neither 'docker compose' nor docker-compose is installed; install one (Debian: apt-get install docker-compose)" >&2
    exit 1
fi
dir=${DOCKER_CONFIG:-$HOME/.docker}/cli-plugins
mkdir -p "$dir"
cat > "$dir/docker-compose.tmp" <<PLUGIN
#!/bin/sh
# Written by kraft's docker/install-compose-plugin.sh: \`docker compose ARGS\` runs $v1 ARGS.
if [ "\${1:-}" = docker-cli-plugin-metadata ]; then
    echo '{"SchemaVersion": "0.1.0", "Vendor": "kraft", "Version": "v1", "ShortDescription": "Docker Compose (runs $v1)"}'
    exit 0
fi
[ "\${1:-}" = compose ] && shift
exec "$v1" "\$@"
PLUGIN
chmod 755 "$dir/docker-compose.tmp"
mv "$dir/docker-compose.tmp" "$dir/docker-compose"
echo "== 'docker compose' now runs $v1 (plugin $dir/docker-compose; delete it to undo)"
