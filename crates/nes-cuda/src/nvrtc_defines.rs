// Included by build.rs and by src/launch/load.rs (the NVRTC compiles at build time and at run time).

/// NVRTC's front end (EDG, not in GNU mode) has no `__builtin_offsetof`, which the generated
/// headers' layout static_asserts use; EDG's `__INTADDR__` gives the same constant expression.
const NVRTC_OFFSETOF: &str = "__builtin_offsetof(T,m)=((unsigned long long)__INTADDR__(&(((T*)0)->m)))";
