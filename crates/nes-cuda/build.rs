//! Builds the kernels twice from the same sources:
//! 1. `kernels/host.cpp` with the host C++ compiler (cc crate) into a static library, for the
//!    CPU parity tests (no GPU, runs in CI);
//! 2. `kernels/nesle.cu` with nvcc into a fatbin (SASS sm_75/80/86/89/90 + PTX compute_90),
//!    embedded by `src/launch.rs`. nvcc comes from `NESLE_NVCC`, else the pinned pip wheel
//!    (`site-packages/nvidia/cu13/bin/nvcc`, see docs TOOLCHAIN.md), else `nvcc` on PATH.
//!    Without nvcc the crate still builds, embeds nothing, and `Batch::new` reports it; with
//!    `NESLE_REQUIRE_KERNELS=1` (CI) a missing nvcc or a failed compile is a build error.
//!
//! The kernels are compiled from a copy in OUT_DIR whose `generated/` headers are freshly
//! generated from nes-core (src/header.rs), so a build can never use a stale layout; the
//! committed `kernels/generated/` is checked by `tests/generated.rs`.

#[path = "src/header.rs"]
mod header;

use std::path::{Path, PathBuf};
use std::process::Command;

const ARCHS: &[&str] = &["75", "80", "86", "89", "90"];
const PTX_ARCH: &str = "90";

fn main() {
    let manifest = PathBuf::from(std::env::var("CARGO_MANIFEST_DIR").unwrap());
    let src = manifest.join("../../kernels");
    let out = PathBuf::from(std::env::var("OUT_DIR").unwrap());
    let kdir = out.join("kernels");
    println!("cargo:rerun-if-changed={}", src.display());
    println!("cargo:rerun-if-changed=src/header.rs");
    println!("cargo:rerun-if-env-changed=NESLE_NVCC");
    println!("cargo:rerun-if-env-changed=NESLE_REQUIRE_KERNELS");

    copy_sources(&src, &kdir);
    std::fs::create_dir_all(kdir.join("generated")).unwrap();
    for (name, text) in header::generated_headers() {
        std::fs::write(kdir.join("generated").join(name), text).unwrap();
    }

    cc::Build::new()
        .cpp(true)
        .file(kdir.join("host.cpp"))
        .include(&kdir)
        .flag_if_supported("-std=c++17")
        .flag_if_supported("-fno-strict-aliasing")
        // Parity tests run tens of thousands of frames: always optimise, even in debug builds.
        .opt_level(2)
        .warnings(true)
        .compile("nesle_host");

    let fatbin = out.join("nesle.fatbin");
    let require = std::env::var("NESLE_REQUIRE_KERNELS").is_ok_and(|v| v == "1");
    match find_nvcc() {
        Some(nvcc) => match compile_fatbin(&nvcc, &kdir, &fatbin) {
            Ok(()) => {}
            Err(e) if require => panic!("NESLE_REQUIRE_KERNELS=1 and the CUDA kernels failed to compile:\n{e}"),
            Err(e) => {
                println!("cargo:warning=nes-cuda: kernel compile failed, GPU backend disabled: {e}");
                std::fs::write(&fatbin, []).unwrap();
            }
        },
        None if require => panic!(
            "NESLE_REQUIRE_KERNELS=1 but nvcc was not found. Install the pinned toolchain: pip install \
             nvidia-cuda-nvcc==13.0.88 nvidia-nvvm==13.0.88 nvidia-cuda-crt==13.0.88 nvidia-cuda-runtime==13.0.96 \
             (or set NESLE_NVCC=/path/to/nvcc)"
        ),
        None => {
            println!(
                "cargo:warning=nes-cuda: nvcc not found (set NESLE_NVCC or pip install nvidia-cuda-nvcc==13.0.88 ...): \
                 building without GPU kernels"
            );
            std::fs::write(&fatbin, []).unwrap();
        }
    }
}

fn copy_sources(src: &Path, dst: &Path) {
    std::fs::create_dir_all(dst).unwrap();
    for entry in std::fs::read_dir(src).unwrap() {
        let path = entry.unwrap().path();
        let ext = path.extension().and_then(|e| e.to_str()).unwrap_or("");
        if path.is_file() && matches!(ext, "h" | "cuh" | "cu" | "cpp") {
            std::fs::copy(&path, dst.join(path.file_name().unwrap())).unwrap();
        }
    }
}

fn find_nvcc() -> Option<PathBuf> {
    if let Ok(p) = std::env::var("NESLE_NVCC") {
        if p == "none" {
            return None;
        }
        return Some(PathBuf::from(p));
    }
    // The pinned pip wheel, in any site-packages python3 knows about.
    let py = Command::new("python3")
        .args(["-c", "import site,sys; print('\\n'.join(site.getsitepackages()+[site.getusersitepackages()]+sys.path))"])
        .output();
    if let Ok(py) = py {
        for dir in String::from_utf8_lossy(&py.stdout).lines() {
            let cand = Path::new(dir).join("nvidia/cu13/bin/nvcc");
            if cand.is_file() {
                return Some(cand);
            }
        }
    }
    let on_path = Command::new("nvcc").arg("--version").output();
    if on_path.is_ok_and(|o| o.status.success()) {
        return Some(PathBuf::from("nvcc"));
    }
    None
}

fn compile_fatbin(nvcc: &Path, kdir: &Path, fatbin: &Path) -> Result<(), String> {
    let mut cmd = Command::new(nvcc);
    cmd.arg("-fatbin").arg("-O3").arg("-std=c++17").arg("-I").arg(kdir);
    for a in ARCHS {
        cmd.arg(format!("-gencode=arch=compute_{a},code=sm_{a}"));
    }
    cmd.arg(format!("-gencode=arch=compute_{PTX_ARCH},code=compute_{PTX_ARCH}"));
    cmd.arg("-o").arg(fatbin).arg(kdir.join("nesle.cu"));
    let out = cmd.output().map_err(|e| format!("could not run {}: {e}", nvcc.display()))?;
    if !out.status.success() {
        return Err(format!(
            "{} exited with {}:\n{}{}",
            nvcc.display(),
            out.status,
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        ));
    }
    Ok(())
}
