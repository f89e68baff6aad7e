//! Writes `kernels/generated/*.h` from nes-core (see `nes_cuda::header`).
//! Run: `cargo run -p nes-cuda --bin gen-header`.

fn main() {
    // It takes no arguments; any (a `--help`) is answered before a file is written.
    if let Some(arg) = std::env::args().nth(1) {
        eprintln!("gen-header takes no arguments (got {arg}): it writes kernels/generated/*.h from nes-core");
        std::process::exit(if arg == "-h" || arg == "--help" { 0 } else { 2 });
    }
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../kernels/generated");
    if let Err(e) = std::fs::create_dir_all(&dir) {
        eprintln!("cannot create {}: {e}", dir.display());
        std::process::exit(1);
    }
    for (name, text) in nes_cuda::header::generated_headers() {
        let path = dir.join(name);
        if let Err(e) = std::fs::write(&path, text) {
            eprintln!("cannot write {}: {e}", path.display());
            std::process::exit(1);
        }
        println!("wrote {}", path.display());
    }
}
