# The kraft image: one node per container (the default command `node`, configured from KRAFT_CFG_*
# variables: see docker/entrypoint.sh) or any `kraft` command; docker-compose.yml runs a cluster.
#
#   docker build -t kraft:local .      # where a registry serves the base image and PyPI is reachable
#   docker/build-images.sh             # anywhere: builds the base image locally if it cannot be
#                                      # pulled, and installs the Python packages without network
#
# kraft's code comes last, in two steps: every step after a changed one is rebuilt, and each costs
# seconds even when it only sets metadata. Nodes keep their data in /var/lib/kraft (mount a volume).
ARG BASE_IMAGE=python:3.11-slim
FROM ${BASE_IMAGE}

COPY docker/entrypoint.sh docker/quorum.sh docker/healthcheck.py /usr/local/lib/kraft-docker/
RUN useradd --system --home-dir /var/lib/kraft --shell /usr/sbin/nologin kraft \
 && mkdir -p /var/lib/kraft /etc/kraft /opt/kraft \
 && chown kraft:kraft /var/lib/kraft /etc/kraft /opt/kraft \
 && cd /usr/local/lib/kraft-docker && chmod 755 entrypoint.sh quorum.sh \
 && ln -s /usr/local/lib/kraft-docker/entrypoint.sh /usr/local/bin/kraft-entrypoint \
 && ln -s /usr/local/lib/kraft-docker/quorum.sh /usr/local/bin/kraft-quorum \
 && printf '#!/bin/sh\nexec /opt/kraft/bin/python /usr/local/lib/kraft-docker/healthcheck.py "$@"\n' \
        > /usr/local/bin/kraft-healthcheck \
 && chmod 755 /usr/local/bin/kraft-healthcheck
ENV PATH=/opt/kraft/bin:$PATH \
    PYTHONUNBUFFERED=1 \
    KRAFT_CFG_LOG_DIRS=/var/lib/kraft/data
USER kraft
WORKDIR /var/lib/kraft
EXPOSE 9092 9093
ENTRYPOINT ["kraft-entrypoint"]
CMD ["node"]
RUN python3 -m venv /opt/kraft

# Offline builds: docker/build-images.sh leaves kraft's dependencies (and its build backend) as
# wheels in build/docker-wheels, installed here in a layer that a change to kraft's code does not
# rebuild. Without that folder the glob matches nothing (pyproject.toml keeps the COPY valid) and
# pip fetches everything from PyPI below.
COPY pyproject.toml build/docker-wheel[s] /tmp/wheels/
RUN if ls /tmp/wheels/*.whl >/dev/null 2>&1; then \
        pip install --no-cache-dir --no-index /tmp/wheels/*.whl; \
    fi

COPY --chown=kraft:kraft . /tmp/src
RUN if [ -d /tmp/src/build/docker-wheels ]; then \
        pip install --no-cache-dir --no-index --no-build-isolation --no-deps /tmp/src; \
    else \
        pip install --no-cache-dir /tmp/src; \
    fi \
 && rm -rf /tmp/src
