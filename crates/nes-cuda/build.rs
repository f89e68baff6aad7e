//! Builds the kernels twice from the same sources:
//! 1. `kernels/host.cpp` with the host C++ compiler (cc crate) into a static library, for the
//!    CPU parity tests (no GPU, runs in CI) and the CPU backend's gray84;
//! 2. `kernels/nesle.cu` with nvcc into a fatbin (SASS sm_75/80/86/89/90 + PTX compute_90),
//!    embedded by `src/launch/images.rs`. nvcc comes from `NESLE_NVCC`, else the pinned pip wheel
//!    (`site-packages/nvidia/cu13/bin/nvcc`, the Makefile's NVCC_WHEELS), else `nvcc` on PATH.
//!    Without nvcc the crate still builds, embeds nothing, and `Batch::new` reports it; with
//!    `NESLE_REQUIRE_KERNELS=1` (CI) a missing nvcc or a failed compile is a build error.
//!
//! 3. the same `nesle.cu` with NVRTC 12.x (pip `nvidia-cuda-nvrtc-cu12==12.9.86`, driven by
//!    `nvrtc_compile.py` under `NESLE_PYTHON`, else `python3`) into cubins sm_61/70/75/80/86/90
//!    (together: machine code for every GPU from sm_61 to sm_90) and one PTX compute_75 whose ISA is lowered to 8.0 (checked with nvcc's
//!    ptxas). CUDA 13 dropped sm_61/sm_70 and its cubins/PTX need a CUDA 13 driver; these
//!    images reach Pascal/Volta and every driver from CUDA 12.0. Missing NVRTC: a cargo
//!    warning, or a build error with `NESLE_REQUIRE_KERNELS=1`. `NESLE_NVRTC` names
//!    libnvrtc.so.12 (`none` skips this step).
//!
//! `OUT_DIR/entry_points.txt` lists the kernels' entry points (src/entry_points.rs), which a
//! run-time compile's sources must match.
//!
//! Every image that was built is listed in OUT_DIR/kernel_images.rs (embedded by
//! `src/launch/images.rs`); the loader picks one per GPU (compute capability, driver version).
//!
//! The kernels are compiled from a copy in OUT_DIR whose `generated/` headers are freshly
//! generated from nes-core (src/header.rs), so a build can never use a stale layout; the
//! committed `kernels/generated/` is checked by `tests/generated.rs`.

#[path = "src/entry_points.rs"]
mod entry_points;
#[path = "src/header.rs"]
mod header;

use std::path::{Path, PathBuf};
use std::process::Command;

const ARCHS: &[&str] = &["75", "80", "86", "89", "90"];
const PTX_ARCH: &str = "90";

/// Cubins built with NVRTC 12.x (CUDA 12 ELF ABI: loadable by every driver from CUDA 12.0).
/// SASS runs on later minors of its major, so sm_86 also serves sm_87/sm_89 and sm_70 sm_72;
/// each one costs ~15-20 s of build time on the 2-core build machine.
const NVRTC_ARCHS: &[&str] = &["61", "70", "75", "80", "86", "90"];
/// The NVRTC PTX, for GPUs newer than sm_90 under a pre-13 driver (Blackwell on CUDA 12.8/12.9).
const NVRTC_PTX_ARCH: &str = "75";
/// NVRTC 12.9 writes PTX ISA 8.8 (drivers >= CUDA 12.9); 8.0 is what a CUDA 12.0 driver JITs.
const NVRTC_PTX_ISA: &str = "8.0";
/// The pip wheel that provides NVRTC 12.x.
const NVRTC_WHEEL: &str = "nvidia-cuda-nvrtc-cu12==12.9.86";
// NVRTC_OFFSETOF, shared with the runtime source override in src/launch/load.rs.
include!("src/nvrtc_defines.rs");

fn main() {
    let manifest = PathBuf::from(std::env::var("CARGO_MANIFEST_DIR").unwrap());
    let src = manifest.join("../../kernels");
    let out = PathBuf::from(std::env::var("OUT_DIR").unwrap());
    let kdir = out.join("kernels");
    println!("cargo:rerun-if-changed={}", src.display());
    println!("cargo:rerun-if-changed=src/header.rs");
    println!("cargo:rerun-if-env-changed=NESLE_NVCC");
    println!("cargo:rerun-if-env-changed=NESLE_REQUIRE_KERNELS");
    println!("cargo:rerun-if-env-changed=NESLE_NVRTC");
    println!("cargo:rerun-if-env-changed=NESLE_PYTHON");
    println!("cargo:rerun-if-changed=nvrtc_compile.py");

    copy_sources(&src, &kdir);
    // What the launches expect; a run-time compile (`NESLE_KERNEL_SOURCE`) is checked against it.
    let entries = entry_points::of_dir(&src).expect("kernels/ is readable");
    std::fs::write(out.join("entry_points.txt"), entries.join("\n")).unwrap();
    std::fs::create_dir_all(kdir.join("generated")).unwrap();
    for (name, text) in header::generated_headers() {
        std::fs::write(kdir.join("generated").join(name), text).unwrap();
    }

    let require = std::env::var("NESLE_REQUIRE_KERNELS").is_ok_and(|v| v == "1");
    let nvcc = find_nvcc();

    // NVRTC runs in the background while the host library and the fatbin compile.
    let nvrtc_dir = out.join("nvrtc");
    let _ = std::fs::remove_dir_all(&nvrtc_dir);
    let nvrtc = start_nvrtc(&manifest, &kdir, &nvrtc_dir, nvcc.as_deref());

    cc::Build::new()
        .cpp(true)
        .file(kdir.join("host.cpp"))
        .include(&kdir)
        // picture.cuh must round like the GPU: no fused multiply-adds on FMA hosts either.
        .flag_if_supported("-ffp-contract=off")
        .flag_if_supported("-std=c++17")
        .flag_if_supported("-fno-strict-aliasing")
        // Parity tests run tens of thousands of frames: always optimise, even in debug builds.
        .opt_level(2)
        .warnings(true)
        .compile("nesle_host");

    let fatbin = out.join("nesle.fatbin");
    let _ = std::fs::remove_file(&fatbin);
    match nvcc {
        Some(nvcc) => match compile_fatbin(&nvcc, &kdir, &fatbin) {
            Ok(()) => {}
            Err(e) if require => panic!("NESLE_REQUIRE_KERNELS=1 and the CUDA kernels failed to compile:\n{e}"),
            Err(e) => {
                println!("cargo:warning=nes-cuda: kernel compile failed, GPU backend disabled: {e}");
                let _ = std::fs::remove_file(&fatbin);
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
                 building without the sm_75..sm_90 fatbin"
            );
        }
    }

    match finish_nvrtc(nvrtc, &nvrtc_dir) {
        Ok(()) => {}
        Err(Nvrtc::Missing(why)) if require => panic!(
            "NESLE_REQUIRE_KERNELS=1 but NVRTC 12.x was not found ({why}). Install it: pip install {NVRTC_WHEEL} \
             (or set NESLE_NVRTC=/path/to/libnvrtc.so.12, NESLE_PYTHON=/path/to/python3)"
        ),
        Err(Nvrtc::Failed(e)) if require => {
            panic!("NESLE_REQUIRE_KERNELS=1 and the CUDA kernels failed to compile with NVRTC:\n{e}")
        }
        Err(Nvrtc::Missing(why)) => println!(
            "cargo:warning=nes-cuda: NVRTC 12.x not found ({why}; pip install {NVRTC_WHEEL}): \
             building without the sm_61/sm_70 cubins and the CUDA 12 driver images"
        ),
        Err(Nvrtc::Failed(e)) => {
            let first = e.lines().take(12).collect::<Vec<_>>().join(" | ");
            println!("cargo:warning=nes-cuda: NVRTC kernel compile failed, no sm_61/sm_70 images: {first}");
            let _ = std::fs::remove_dir_all(&nvrtc_dir);
        }
    }

    write_image_list(&out, &fatbin, &nvrtc_dir);
}

/// Writes OUT_DIR/kernel_images.rs: a `&[Image]` expression listing every image that was built
/// (src/launch/images.rs includes it).
fn write_image_list(out: &Path, fatbin: &Path, nvrtc_dir: &Path) {
    let mut items = Vec::new();
    let present = |p: &Path| std::fs::metadata(p).is_ok_and(|m| m.len() > 0);
    let bytes = |p: &Path| {
        format!("include_bytes!(concat!(env!(\"OUT_DIR\"), \"/{}\"))", p.strip_prefix(out).unwrap().display())
    };
    if present(fatbin) {
        items.push(format!(
            "Image {{ kind: Kind::Fatbin {{ sass: &[{}], ptx: {PTX_ARCH} }}, bytes: {} }}",
            ARCHS.join(", "),
            bytes(fatbin)
        ));
    }
    for a in NVRTC_ARCHS {
        let p = nvrtc_dir.join(format!("nesle.sm_{a}.cubin"));
        if present(&p) {
            items.push(format!("Image {{ kind: Kind::Cubin({a}), bytes: {} }}", bytes(&p)));
        }
    }
    let p = nvrtc_dir.join(format!("nesle.compute_{NVRTC_PTX_ARCH}.ptx"));
    if present(&p) {
        items.push(format!("Image {{ kind: Kind::Ptx({NVRTC_PTX_ARCH}), bytes: {} }}", bytes(&p)));
    }
    let text = format!("// Generated by build.rs: the embedded kernel images.\n&[\n    {}\n]\n", items.join(",\n    "));
    std::fs::write(out.join("kernel_images.rs"), text).unwrap();
}

enum Nvrtc {
    /// No NVRTC 12.x (or no Python to drive it): optional unless NESLE_REQUIRE_KERNELS=1.
    Missing(String),
    /// NVRTC was found and the compile failed.
    Failed(String),
}

fn python() -> String {
    std::env::var("NESLE_PYTHON").unwrap_or_else(|_| "python3".into())
}

/// Starts nvrtc_compile.py on the OUT_DIR copy of the kernels.
fn start_nvrtc(manifest: &Path, kdir: &Path, dir: &Path, nvcc: Option<&Path>) -> Result<std::process::Child, Nvrtc> {
    let lib = std::env::var("NESLE_NVRTC").ok();
    if lib.as_deref() == Some("none") {
        return Err(Nvrtc::Missing("NESLE_NVRTC=none".into()));
    }
    let mut cmd = Command::new(python());
    cmd.arg(manifest.join("nvrtc_compile.py"))
        .arg(kdir.join("nesle.cu"))
        .arg("-I")
        .arg(kdir)
        .arg("-D")
        .arg(NVRTC_OFFSETOF)
        .arg("--out-dir")
        .arg(dir)
        .arg("--sm")
        .arg(NVRTC_ARCHS.join(","))
        .arg("--ptx")
        .arg(NVRTC_PTX_ARCH)
        .arg("--ptx-isa")
        .arg(NVRTC_PTX_ISA)
        .arg("--jobs")
        .arg(std::env::var("NUM_JOBS").unwrap_or_else(|_| "2".into()));
    if let Some(lib) = lib {
        cmd.arg("--nvrtc").arg(lib);
    }
    if let Some(ptxas) = find_ptxas(nvcc) {
        cmd.arg("--ptxas").arg(ptxas);
    }
    cmd.stdout(std::process::Stdio::piped()).stderr(std::process::Stdio::piped());
    cmd.spawn().map_err(|e| Nvrtc::Missing(format!("could not run {}: {e}", python())))
}

fn finish_nvrtc(child: Result<std::process::Child, Nvrtc>, dir: &Path) -> Result<(), Nvrtc> {
    let out = child?.wait_with_output().map_err(|e| Nvrtc::Failed(format!("nvrtc_compile.py: {e}")))?;
    let (stdout, stderr) = (String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    let _ = std::fs::write(dir.join("log.txt"), format!("{stdout}{stderr}"));
    match out.status.code() {
        Some(0) => {
            if stdout.contains("not checked") {
                println!("cargo:warning=nes-cuda: no ptxas next to nvcc: the NVRTC PTX (ISA {NVRTC_PTX_ISA}) was not checked");
            }
            Ok(())
        }
        Some(2) => Err(Nvrtc::Missing(stderr.trim().to_string())),
        _ => Err(Nvrtc::Failed(format!("{} exited with {}:\n{stdout}{stderr}", python(), out.status))),
    }
}

/// ptxas next to nvcc (the pip wheel ships it), used to check the ISA-lowered PTX.
fn find_ptxas(nvcc: Option<&Path>) -> Option<PathBuf> {
    let nvcc = nvcc?;
    let beside = nvcc.with_file_name("ptxas");
    if nvcc.parent().is_some_and(|p| !p.as_os_str().is_empty()) {
        return beside.is_file().then_some(beside);
    }
    let on_path = Command::new("ptxas").arg("--version").output();
    on_path.is_ok_and(|o| o.status.success()).then(|| PathBuf::from("ptxas"))
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
    let py = Command::new(python())
        .args([
            "-c",
            "import site,sys; print('\\n'.join(site.getsitepackages()+[site.getusersitepackages()]+sys.path))",
        ])
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
