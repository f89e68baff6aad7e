//! The embedded kernel images and which one to load on a given GPU (pure logic, unit-tested).
//!
//! build.rs embeds up to three kinds of image of the same `kernels/nesle.cu`:
//! - the nvcc 13 fatbin (SASS sm_75/80/86/89/90 + PTX compute_90, ISA 9.0). CUDA 13 writes a
//!   new cubin ELF ABI (OS/ABI 0x41, ABI version 8) and PTX ISA 9.0: it needs a CUDA 13 driver
//!   (>= 580);
//! - NVRTC 12.9 cubins sm_61/70/75/80/86/90 (CUDA 12 ELF ABI 7; a cubin runs on the later
//!   minors of its major, so together they cover every GPU from sm_61 to sm_90): they run on
//!   any driver from CUDA 12.0 (>= 525) that supports the GPU;
//! - one NVRTC 12.9 PTX (compute_75) whose `.version` build.rs lowered to 8.0 (checked with
//!   ptxas): any driver from CUDA 12.0 can JIT it, for GPUs newer than the newest cubin.
//!
//! [`candidates`] ranks them for a device's compute capability and driver version; the loader
//! tries them in that order.

/// What an embedded image holds. Architectures are written as nvcc does: 61 = sm_61, 100 = sm_100.
// Only the generated list constructs these, and it is empty in a build without nvcc and NVRTC.
#[cfg_attr(not(test), allow(dead_code))]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Kind {
    /// nvcc 13 fatbin: SASS for each of `sass`, plus PTX for `ptx`. Needs a CUDA 13 driver.
    Fatbin { sass: &'static [u32], ptx: u32 },
    /// An NVRTC 12.x cubin for one real architecture.
    Cubin(u32),
    /// NVRTC 12.x PTX (ISA 8.0) for one virtual architecture; the driver JIT-compiles it.
    Ptx(u32),
}

/// One embedded image.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Image {
    pub(crate) kind: Kind,
    pub(crate) bytes: &'static [u8],
}

/// The images build.rs embedded (generated list; empty without nvcc and NVRTC).
pub(crate) static EMBEDDED: &[Image] = include!(concat!(env!("OUT_DIR"), "/kernel_images.rs"));

/// cuDriverGetVersion of the first driver that loads CUDA 13 cubins and PTX ISA 9.0.
pub(crate) const CUDA_13: i32 = 13000;

impl Image {
    /// The name `NESLE_KERNEL_IMAGE` selects it by: `fatbin`, `sm_61`, `compute_75`.
    pub(crate) fn name(&self) -> String {
        match self.kind {
            Kind::Fatbin { .. } => "fatbin".into(),
            Kind::Cubin(a) => format!("sm_{a}"),
            Kind::Ptx(a) => format!("compute_{a}"),
        }
    }

    /// A longer description for messages.
    pub(crate) fn describe(&self) -> String {
        match self.kind {
            Kind::Fatbin { sass, ptx } => {
                let sass: Vec<String> = sass.iter().map(|a| format!("sm_{a}")).collect();
                format!("nvcc 13 fatbin (SASS {} + PTX compute_{ptx}; needs a CUDA 13 driver)", sass.join("/"))
            }
            Kind::Cubin(a) => format!("NVRTC 12 cubin sm_{a}"),
            Kind::Ptx(a) => format!("NVRTC 12 PTX compute_{a} (ISA 8.0, JIT-compiled by the driver)"),
        }
    }

    /// Whether a device of compute capability `cc` (major, minor) can run this image at all.
    pub(crate) fn fits(&self, cc: (u32, u32)) -> bool {
        match self.kind {
            Kind::Fatbin { sass, ptx } => sass.iter().any(|&a| sass_runs_on(a, cc)) || ptx_runs_on(ptx, cc),
            Kind::Cubin(a) => sass_runs_on(a, cc),
            Kind::Ptx(a) => ptx_runs_on(a, cc),
        }
    }
}

/// A cubin for sm_XY runs on devices X.Z with Z >= Y (same major only).
fn sass_runs_on(arch: u32, (major, minor): (u32, u32)) -> bool {
    arch / 10 == major && arch % 10 <= minor
}

/// PTX for compute_XY can be JIT-compiled for any device of compute capability >= X.Y.
fn ptx_runs_on(arch: u32, (major, minor): (u32, u32)) -> bool {
    major * 10 + minor >= arch
}

/// Indices into `images` worth trying on a device of compute capability `cc` under a driver
/// reporting `driver` (cuDriverGetVersion: 12000 = CUDA 12.0), best first; empty when none
/// can run there.
///
/// Order: with a CUDA 13 driver the nvcc fatbin (the tested product build); then the NVRTC 12
/// cubin of the highest architecture the device can run; then the NVRTC 12 PTX; with an older
/// driver the fatbin last (its CUDA 13 cubins and ISA 9.0 PTX will most likely be refused, but
/// the driver has the final word).
pub(crate) fn candidates(cc: (u32, u32), driver: i32, images: &[Image]) -> Vec<usize> {
    let usable = |i: &usize| !images[*i].bytes.is_empty() && images[*i].fits(cc);
    let of = |want: fn(&Kind) -> bool| (0..images.len()).filter(move |i| want(&images[*i].kind)).filter(usable);
    let fatbins: Vec<usize> = of(|k| matches!(k, Kind::Fatbin { .. })).collect();
    let mut cubins: Vec<usize> = of(|k| matches!(k, Kind::Cubin(_))).collect();
    let mut ptx: Vec<usize> = of(|k| matches!(k, Kind::Ptx(_))).collect();
    let arch = |i: &usize| match images[*i].kind {
        Kind::Cubin(a) | Kind::Ptx(a) => a,
        Kind::Fatbin { .. } => 0,
    };
    // The closest architecture first: the highest the device can run.
    cubins.sort_by_key(|i| std::cmp::Reverse(arch(i)));
    ptx.sort_by_key(|i| std::cmp::Reverse(arch(i)));

    let mut out = Vec::new();
    if driver >= CUDA_13 {
        out.extend(&fatbins);
    }
    out.extend(cubins);
    out.extend(ptx);
    if driver < CUDA_13 {
        out.extend(&fatbins);
    }
    out
}

/// The image `NESLE_KERNEL_IMAGE` names (`fatbin`, `sm_61`, `compute_75`), if embedded.
pub(crate) fn by_name(name: &str, images: &[Image]) -> Option<usize> {
    images.iter().position(|im| !im.bytes.is_empty() && im.name() == name.trim())
}

/// The names of the embedded images, for messages: "fatbin, sm_61, sm_70, compute_75".
pub(crate) fn list(images: &[Image]) -> String {
    let names: Vec<String> = images.iter().filter(|im| !im.bytes.is_empty()).map(Image::name).collect();
    if names.is_empty() {
        "none".into()
    } else {
        names.join(", ")
    }
}

/// "12.4" from 12040.
pub(crate) fn driver_string(v: i32) -> String {
    format!("{}.{}", v / 1000, (v % 1000) / 10)
}

#[cfg(test)]
mod tests {
    use super::*;

    const B: &[u8] = b"x";
    const FATBIN: Image = Image { kind: Kind::Fatbin { sass: &[75, 80, 86, 89, 90], ptx: 90 }, bytes: B };

    /// What build.rs embeds with both nvcc and the NVRTC 12 wheel.
    fn full() -> Vec<Image> {
        let mut v = vec![FATBIN];
        v.extend([61, 70, 75, 80, 86, 90].map(|a| Image { kind: Kind::Cubin(a), bytes: B }));
        v.push(Image { kind: Kind::Ptx(75), bytes: B });
        v
    }

    fn first(cc: (u32, u32), driver: i32, images: &[Image]) -> Option<String> {
        candidates(cc, driver, images).first().map(|&i| images[i].name())
    }

    fn names(cc: (u32, u32), driver: i32, images: &[Image]) -> Vec<String> {
        candidates(cc, driver, images).iter().map(|&i| images[i].name()).collect()
    }

    #[test]
    fn a_cuda_13_driver_gets_the_nvcc_fatbin_wherever_it_fits() {
        let im = full();
        for cc in [(7, 5), (8, 0), (8, 6), (8, 7), (8, 9), (9, 0), (10, 0), (12, 0)] {
            assert_eq!(first(cc, 13000, &im).as_deref(), Some("fatbin"), "{cc:?}");
        }
        // H200 on driver 580 (CUDA 13.0): fatbin, then the NVRTC sm_90 cubin, then the PTX.
        assert_eq!(names((9, 0), 13000, &im), ["fatbin", "sm_90", "compute_75"]);
    }

    #[test]
    fn pascal_and_volta_get_the_nvrtc_cubins_on_any_driver() {
        let im = full();
        for driver in [12000, 12090, 13000, 13020] {
            assert_eq!(names((6, 1), driver, &im), ["sm_61"], "GTX 1050 Ti, driver {driver}");
            assert_eq!(names((6, 2), driver, &im), ["sm_61"], "Jetson TX2");
            assert_eq!(first((7, 0), driver, &im).as_deref(), Some("sm_70"), "V100");
            assert_eq!(first((7, 2), driver, &im).as_deref(), Some("sm_70"), "Xavier");
        }
    }

    #[test]
    fn a_cuda_12_driver_gets_the_closest_nvrtc_cubin_then_the_ptx_then_the_fatbin() {
        let im = full();
        assert_eq!(names((8, 6), 12000, &im), ["sm_86", "sm_80", "compute_75", "fatbin"]);
        assert_eq!(first((8, 7), 12040, &im).as_deref(), Some("sm_86"), "Orin");
        assert_eq!(first((8, 9), 12040, &im).as_deref(), Some("sm_86"));
        assert_eq!(first((7, 5), 12000, &im).as_deref(), Some("sm_75"));
        assert_eq!(first((9, 0), 12000, &im).as_deref(), Some("sm_90"));
        // Blackwell on a CUDA 12.8 driver: no cubin of its major; the ISA 8.0 PTX is JIT-compiled.
        assert_eq!(names((10, 0), 12080, &im), ["compute_75", "fatbin"]);
        assert_eq!(names((12, 0), 12080, &im), ["compute_75", "fatbin"]);
    }

    #[test]
    fn nothing_fits_older_gpus_or_an_empty_build() {
        let im = full();
        for cc in [(5, 2), (6, 0), (3, 5)] {
            assert!(candidates(cc, 13000, &im).is_empty(), "{cc:?}");
        }
        assert!(candidates((9, 0), 13000, &[]).is_empty());
        // An image build.rs left empty never counts.
        let empty = [Image { kind: Kind::Cubin(61), bytes: b"" }];
        assert!(candidates((6, 1), 13000, &empty).is_empty());
        assert_eq!(list(&empty), "none");
    }

    #[test]
    fn without_the_nvrtc_wheel_only_the_fatbin_is_offered() {
        let im = [FATBIN];
        assert_eq!(names((9, 0), 13000, &im), ["fatbin"]);
        assert_eq!(names((9, 0), 12040, &im), ["fatbin"], "tried last; the driver decides");
        assert!(candidates((6, 1), 13000, &im).is_empty());
        assert!(candidates((7, 0), 13000, &im).is_empty());
    }

    #[test]
    fn without_nvcc_the_nvrtc_images_cover_everything_from_sm_61() {
        let im: Vec<Image> = full().into_iter().filter(|i| !matches!(i.kind, Kind::Fatbin { .. })).collect();
        assert_eq!(first((9, 0), 13000, &im).as_deref(), Some("sm_90"));
        assert_eq!(first((6, 1), 13000, &im).as_deref(), Some("sm_61"));
        assert_eq!(first((10, 0), 13000, &im).as_deref(), Some("compute_75"));
    }

    #[test]
    fn names_select_images_and_list_them() {
        let im = full();
        assert_eq!(by_name("sm_61", &im), Some(1));
        assert_eq!(by_name("fatbin", &im), Some(0));
        assert_eq!(by_name("compute_75", &im), Some(7));
        assert_eq!(by_name("sm_52", &im), None);
        assert_eq!(list(&im), "fatbin, sm_61, sm_70, sm_75, sm_80, sm_86, sm_90, compute_75");
        assert_eq!(driver_string(12040), "12.4");
        assert_eq!(driver_string(13000), "13.0");
    }
}
