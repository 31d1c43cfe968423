/* Linked into the unit tests of the ThreadSanitizer build alone (make
 * check-tsan). Criterion keeps its shared arena at an address that its
 * library, boxfort, draws with rand_r() between 0x200000000000 and
 * 0x600000000000, and gives up after ten draws that land on mapped pages;
 * under ThreadSanitizer nearly all of that range is its shadow, so the
 * binary aborts ("Could not initialize inheritable arena", Criterion issue
 * 274). This rand_r() steers the draws into the application range
 * ThreadSanitizer leaves free there (0x558000000000 and up, 16 MiB apart).
 * Neither ted nor its tests call rand_r(). */
#include <stdlib.h>

int rand_r(unsigned int *seed)
{
    *seed += 1;
    return (int)(0x358000u + (*seed % 0x8000u) * 2u);
}
