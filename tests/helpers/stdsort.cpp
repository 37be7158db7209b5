// stdsort: libstdc++'s std::sort as the oracle for the CPU backend's port
// (backend_cpu_argsort_desc, test_backend_moe). Reads rows "n v0 .. v(n-1)"
// (floats in any strtof form) from the file argv[1] and prints, one line per
// row, the indices 0..n-1 sorted as ggml_argsort (GGML_SORT_ORDER_DESC) does:
// std::sort with the comparator data[a] > data[b].
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <vector>

int main(int argc, char **argv)
{
    if (argc != 2)
        return 2;
    FILE *f = std::fopen(argv[1], "r");
    if (!f)
        return 1;
    long n;
    while (std::fscanf(f, "%ld", &n) == 1 && n > 0 && n < 100000) {
        std::vector<float> d((size_t)n);
        std::vector<int> idx((size_t)n);
        char tok[64];
        for (long i = 0; i < n; i++) {
            if (std::fscanf(f, "%63s", tok) != 1)
                return 1;
            d[(size_t)i] = std::strtof(tok, nullptr);
            idx[(size_t)i] = (int)i;
        }
        std::sort(idx.begin(), idx.end(), [&d](int a, int b) { return d[(size_t)a] > d[(size_t)b]; });
        for (long i = 0; i < n; i++)
            std::printf(i ? " %d" : "%d", idx[(size_t)i]);
        std::printf("\n");
    }
    std::fclose(f);
    return 0;
}
