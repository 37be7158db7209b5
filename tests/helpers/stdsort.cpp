// stdsort: libstdc++'s std::sort as the oracle for the CPU backend's port
// (backend_cpu_argsort_desc, test_backend_moe). Reads rows "n v0 .. v(n-1)"
// (floats in any strtof form) from the file argv[1] and prints, one line per
// row, the indices 0..n-1 sorted as ggml_argsort (GGML_SORT_ORDER_DESC) does:
// std::sort with the comparator data[a] > data[b]. With "heap" as argv[2]:
// std::partial_sort(first, last, last), introsort's fallback at depth 0.
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

int main(int argc, char **argv)
{
    if (argc != 2 && argc != 3)
        return 2;
    const bool heap = argc == 3 && std::string(argv[2]) == "heap";
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
        auto cmp = [&d](int a, int b) { return d[(size_t)a] > d[(size_t)b]; };
        if (heap)
            std::partial_sort(idx.begin(), idx.end(), idx.end(), cmp);
        else
            std::sort(idx.begin(), idx.end(), cmp);
        for (long i = 0; i < n; i++)
            std::printf(i ? " %d" : "%d", idx[(size_t)i]);
        std::printf("\n");
    }
    std::fclose(f);
    return 0;
}
