//! Finding the kernels: the embedded image that loads on this GPU and driver (`images.rs` ranks
//! them), or, for kernel development, a source tree compiled at run time by NVRTC
//! (`NESLE_KERNEL_SOURCE`).

use super::{cuda, host_state_size, images};
use crate::Error;
use cudarc::driver::CudaContext;
use std::sync::Arc;

/// Whether this build embeds GPU kernels.
pub(crate) fn has_kernels() -> bool {
    images::EMBEDDED.iter().any(|im| !im.bytes.is_empty())
}

/// The driver's CUDA version as cuDriverGetVersion reports it (12040 = 12.4).
pub(super) fn driver_version() -> Result<i32, Error> {
    let mut v = 0i32;
    // SAFETY: cuDriverGetVersion writes one int through a valid pointer; libcuda was checked
    // present by the caller (it needs no cuInit and no context).
    let r = unsafe { cudarc::driver::sys::cuDriverGetVersion(&mut v) };
    r.result().map_err(cuda)?;
    Ok(v)
}

include!("../nvrtc_defines.rs");

/// For kernel development: compiles `dir/nesle.cu` (`NESLE_KERNEL_SOURCE=dir`) with the NVRTC
/// found at run time (libnvrtc on the library path) for this GPU's architecture, plus the
/// options in `NESLE_KERNEL_OPTIONS` (whitespace-separated, e.g. `-DX=1 --maxrregcount=128`),
/// so kernel edits can be tried on a GPU machine without rebuilding the crate.
fn compile_source(ctx: &Arc<CudaContext>, dir: &str) -> Result<Arc<cudarc::driver::CudaModule>, Error> {
    let (major, minor) = ctx.compute_capability().map_err(cuda)?;
    let path = std::path::Path::new(dir).join("nesle.cu");
    let src = std::fs::read_to_string(&path)
        .map_err(|e| Error::BadArgument(format!("NESLE_KERNEL_SOURCE: cannot read {}: {e}", path.display())))?;
    if src.contains('\0') {
        // NVRTC takes the source as a C string.
        return Err(Error::BadArgument(format!("NESLE_KERNEL_SOURCE: {} holds a NUL byte", path.display())));
    }
    check_entry_points(dir)?;
    // The tree's state layout must be the library's too (its `generated/` headers could be
    // stale): appended, this fails the compile with the two sizes instead of corrupting states.
    let size = host_state_size();
    let src = format!(
        "{src}\nstatic_assert(sizeof(FlatState) == {size}, \"NESLE_KERNEL_SOURCE: FlatState's size \
         differs from this library's ({size} bytes): the tree's state layout is another build's\");\n"
    );
    // SAFETY: only tries to dlopen libnvrtc; cudarc would panic on first use without it.
    if !unsafe { cudarc::nvrtc::sys::is_culib_present() } {
        return Err(Error::NoDevice(
            "NESLE_KERNEL_SOURCE needs NVRTC: put the directory of libnvrtc.so (and its builtins) on LD_LIBRARY_PATH"
                .into(),
        ));
    }
    let mut options = vec![
        "--std=c++17".to_string(),
        format!("-D{NVRTC_OFFSETOF}"),
        format!("--gpu-architecture=compute_{major}{minor}"),
    ];
    options.extend(std::env::var("NESLE_KERNEL_OPTIONS").unwrap_or_default().split_whitespace().map(String::from));
    let opts = cudarc::nvrtc::CompileOptions {
        include_paths: vec![dir.to_string()],
        options,
        name: Some("nesle.cu".into()),
        ..Default::default()
    };
    let ptx = cudarc::nvrtc::compile_ptx_with_opts(src, opts)
        .map_err(|e| Error::Cuda(format!("NESLE_KERNEL_SOURCE: NVRTC failed on {}: {e:?}", path.display())))?;
    ctx.load_module(ptx).map_err(cuda)
}

/// The entry points of the kernels this library was built with (build.rs, src/entry_points.rs).
pub(crate) fn built_entry_points() -> Vec<String> {
    let text = include_str!(concat!(env!("OUT_DIR"), "/entry_points.txt"));
    text.lines().map(String::from).collect()
}

/// Refuses a `NESLE_KERNEL_SOURCE` tree whose entry points take other parameters than the
/// launches pass: its kernels would load and run on misplaced arguments, without an error.
fn check_entry_points(dir: &str) -> Result<(), Error> {
    let theirs = crate::entry_points::of_dir(std::path::Path::new(dir))
        .map_err(|e| Error::BadArgument(format!("NESLE_KERNEL_SOURCE: cannot read {dir}: {e}")))?;
    let ours = built_entry_points();
    if theirs == ours {
        return Ok(());
    }
    let only_theirs: Vec<&String> = theirs.iter().filter(|s| !ours.contains(s)).collect();
    let only_ours: Vec<&String> = ours.iter().filter(|s| !theirs.contains(s)).collect();
    Err(Error::BadArgument(format!(
        "NESLE_KERNEL_SOURCE: the kernel entry points in {dir} differ from the ones this library \
         launches, so they would run on wrong arguments; {dir} has {only_theirs:?} where the \
         library has {only_ours:?}. Build the library from those sources, or use sources whose \
         entry points match"
    )))
}

/// Loads the kernels: compiled from `NESLE_KERNEL_SOURCE` if set (development), else the
/// embedded image `NESLE_KERNEL_IMAGE` names (fatbin, sm_61, compute_75, ...) if set, else the
/// candidates of `images::candidates` in order until one loads. Returns the module and which
/// image it came from, for reports.
pub(super) fn load_kernels(ctx: &Arc<CudaContext>) -> Result<(Arc<cudarc::driver::CudaModule>, String), Error> {
    if let Ok(dir) = std::env::var("NESLE_KERNEL_SOURCE") {
        if !dir.trim().is_empty() {
            let module = compile_source(ctx, dir.trim())?;
            return Ok((module, format!("NVRTC run-time compile of {}", dir.trim())));
        }
    }
    let (major, minor) = ctx.compute_capability().map_err(cuda)?;
    let cc = (major.max(0) as u32, minor.max(0) as u32);
    let driver = driver_version()?;
    let all = images::EMBEDDED;
    let order = match std::env::var("NESLE_KERNEL_IMAGE") {
        Ok(name) if !name.trim().is_empty() => match images::by_name(&name, all) {
            Some(i) => vec![i],
            None => {
                return Err(Error::BadArgument(format!(
                    "NESLE_KERNEL_IMAGE={name}: no such embedded image (this build has: {})",
                    images::list(all)
                )))
            }
        },
        _ => images::candidates(cc, driver, all),
    };
    if order.is_empty() {
        return Err(Error::NoDevice(format!(
            "{} (compute capability {major}.{minor}, driver CUDA {}) is not supported by this build: \
             it has kernels for {} (sm_61 and newer need the NVRTC 12 images: pip install \
             nvidia-cuda-nvrtc-cu12==12.9.86 and rebuild)",
            ctx.name().unwrap_or_else(|_| "this GPU".into()),
            images::driver_string(driver),
            images::list(all)
        )));
    }
    let mut failures = Vec::new();
    for i in order {
        let im = &all[i];
        let code = match im.kind {
            // The driver wants PTX as NUL-terminated text; from_src adds the NUL.
            images::Kind::Ptx(_) => cudarc::nvrtc::Ptx::from_src(String::from_utf8_lossy(im.bytes).into_owned()),
            _ => cudarc::nvrtc::Ptx::from_binary(im.bytes.to_vec()),
        };
        match ctx.load_module(code) {
            Ok(m) => return Ok((m, im.describe())),
            Err(e) => failures.push(format!("{}: {e:?}", im.describe())),
        }
    }
    Err(Error::Cuda(format!(
        "loading the kernels failed on compute capability {major}.{minor} with driver CUDA {}: {}",
        images::driver_string(driver),
        failures.join("; ")
    )))
}

#[cfg(test)]
mod tests {
    use super::check_entry_points;

    #[test]
    fn a_source_tree_is_refused_when_an_entry_points_parameters_differ() {
        let kernels = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../kernels");
        let dir = std::env::temp_dir().join(format!("nesle-entry-points-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        for entry in std::fs::read_dir(&kernels).unwrap() {
            let path = entry.unwrap().path();
            if path.is_file() {
                std::fs::copy(&path, dir.join(path.file_name().unwrap())).unwrap();
            }
        }
        let d = dir.to_str().unwrap();
        assert!(check_entry_points(d).is_ok());
        // A parameter renamed: the same launch.
        let cu = dir.join("nesle.cu");
        let text = std::fs::read_to_string(&cu).unwrap();
        let sig = "nesle_gather_ram(const u8* states, u32 stride, u8* out, u32 n_envs)";
        assert!(text.contains(sig));
        std::fs::write(&cu, text.replace(sig, "nesle_gather_ram(const u8* s, u32 stride, u8* out, u32 n)")).unwrap();
        assert!(check_entry_points(d).is_ok());
        // One added: refused, naming the kernel both ways.
        std::fs::write(
            &cu,
            text.replace(sig, "nesle_gather_ram(const u8* states, u32 stride, u8* out, u32 n_envs, u32 x)"),
        )
        .unwrap();
        let err = check_entry_points(d).unwrap_err().to_string();
        std::fs::remove_dir_all(&dir).unwrap();
        assert!(err.contains("nesle_gather_ram(const u8*, u32, u8*, u32, u32)"), "{err}");
        assert!(err.contains("nesle_gather_ram(const u8*, u32, u8*, u32)\""), "{err}");
    }
}
