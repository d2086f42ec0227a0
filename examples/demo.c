/* demo.c — placeholder, grown below. */
#include "kiln.h"
int main(void) { return 0; }
