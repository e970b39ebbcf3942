/* Preloaded into the sanitizer test runs (scripts/test.sh): makes dlclose()
 * a no-op, so that the Vulkan driver and layers that the loader dlopen()s
 * stay mapped until the process exits. LeakSanitizer checks for leaks at
 * exit; without this, a library unloaded by vkDestroyInstance shows up as
 * "<unknown module>" in leak reports (so it cannot be told apart from
 * Kompute's own code, nor suppressed by name), and memory still referenced
 * from its globals is reported as leaked. */
int
dlclose(void* handle)
{
    (void)handle;
    return 0;
}
