# A small image with the ratelab binary: build in the Rust image, run on slim
# Debian. `docker build -t ratelab .`, then
# `docker run --rm -v "$PWD:/work" -w /work ratelab check` (see docs/book/src/ci.md).
FROM rust:1-bookworm AS build
WORKDIR /src
COPY . .
RUN cargo build --release --locked --bin ratelab \
 && strip target/release/ratelab

FROM debian:bookworm-slim
COPY --from=build /src/target/release/ratelab /usr/local/bin/ratelab
COPY --from=build /src/docs/ci/check.sh /usr/local/share/ratelab/check.sh
WORKDIR /work
ENTRYPOINT ["ratelab"]
CMD ["--help"]
