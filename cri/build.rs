//! Generates the CRI v1 gRPC code (package `runtime.v1`) from the vendored proto at build time,
//! without a system `protoc`: protox parses the proto into a FileDescriptorSet and
//! tonic-prost-build turns that into prost messages and tonic clients (servers only with the
//! `fake` feature, which serves them in tests).

fn main() -> Result<(), Box<dyn std::error::Error>> {
    println!("cargo:rerun-if-changed=proto/api.proto");
    let fds = protox::compile(["api.proto"], ["proto"])?;
    let fake = std::env::var_os("CARGO_FEATURE_FAKE").is_some();
    tonic_prost_build::configure()
        .build_client(true)
        .build_server(fake)
        // The fake runtime implements a few RuntimeService methods; the rest answer Unimplemented
        // as a real runtime's missing method would.
        .generate_default_stubs(true)
        .build_transport(true)
        .compile_fds(fds)?;
    Ok(())
}
