// Shared by cpu.hpp and cuda.hpp (inside namespace pk_rt): a view's layout, the third
// template argument of View. Generated code writes it as a number (pkernels.translate.ir's
// ViewLayout has the same values; gdb and cuda-gdb print it so: View<double, 2, 2>).
// Knowing at compile time which axis has stride 1 lets an access skip that axis's multiply
// by a run-time stride: on the GPU a 64-bit multiply per access, which a LayoutLeft view's
// x[j, c] otherwise pays for j.
enum : int {
    STRIDED = 0,     // no axis known to have stride 1
    LAST_UNIT = 1,   // the last axis: a C-order array, any contiguous rank-1 one
    FIRST_UNIT = 2,  // the first axis (rank >= 2): a Fortran-order array, Kokkos' LayoutLeft
};

// The axis of stride 1 of a rank-R view of layout L; -1 when none is known. An access
// multiplies every other axis's index by its stride (the views keep all their strides:
// debuggers read them).
template <int L, int R>
struct UnitAxis {
    static constexpr int value = L == LAST_UNIT ? R - 1 : (L == FIRST_UNIT ? 0 : -1);
};
