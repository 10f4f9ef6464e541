# ebb's image: built on Debian bookworm, run on bookworm-slim with the
# binary, the libraries it links and its Lua runtime (lua/ and policies/),
# as a non-root user. The binary finds lua/ and policies/ in
# <exe>/../share/ebb, so the image needs no EBB_HOME.
#
#   docker build -t ebb:0.1.0 .
#   docker run --rm ebb:0.1.0 version
#   docker run --rm -v "$PWD/deploy/base:/p:ro" ebb:0.1.0 \
#     check --policy /p/policy.yaml --policy-dir /p/strategies

FROM debian:bookworm AS build
# make and a compiler; `make deps` installs the rest of the stack
RUN apt-get update \
 && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends make gcc libc6-dev \
 && rm -rf /var/lib/apt/lists/*
WORKDIR /src
# the packages depend on the Makefile alone: a source change keeps this layer
COPY Makefile ./
RUN make deps && rm -rf /var/lib/apt/lists/*
COPY include/ include/
COPY engine/ engine/
COPY vendor/ vendor/
COPY lua/ lua/
COPY policies/ policies/
RUN make all
# the installed layout, then a check through it: the deployment's policy and
# its strategy load with the runtime found next to the binary
RUN install -D -m 0755 build/ebb /out/usr/local/bin/ebb \
 && mkdir -p /out/usr/local/share/ebb \
 && cp -R lua policies /out/usr/local/share/ebb/
COPY deploy/base/policy.yaml deploy/base/policy.yaml
COPY deploy/base/strategies/ deploy/base/strategies/
RUN cd / && /out/usr/local/bin/ebb version \
 && /out/usr/local/bin/ebb check --policy /src/deploy/base/policy.yaml \
      --policy-dir /src/deploy/base/strategies

FROM debian:bookworm-slim
LABEL org.opencontainers.image.title="ebb" \
      org.opencontainers.image.description="A Kubernetes descheduler with strategies in Lua"
RUN apt-get update \
 && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends \
      liblua5.4-0 libcurl4 libcjson1 libyaml-0-2 libuv1 libhttp-parser2.9 libssl3 libisal2 ca-certificates \
 && rm -rf /var/lib/apt/lists/*
COPY --from=build /out/ /
# the uid the manifests in deploy/ run as (runAsUser: 65532); no home, no shell needed
USER 65532:65532
ENTRYPOINT ["/usr/local/bin/ebb"]
CMD ["--help"]
