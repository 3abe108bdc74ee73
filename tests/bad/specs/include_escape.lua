include "../../CMakeLists.txt"
