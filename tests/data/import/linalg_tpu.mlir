module @jit_linalg_generic attributes {jax.uses_shape_polymorphism = false, mhlo.num_partitions = 1 : i32, mhlo.num_replicas = 1 : i32} {
  func.func public @main(%arg0: tensor<4x4xf32>, %arg1: tensor<3x3xf32>, %arg2: tensor<2x3x3xf32>, %arg3: tensor<4x4xf32>, %arg4: tensor<4x2xf32>, %arg5: tensor<2x4xf32>) -> (tensor<4x4xf32> {jax.result_info = "result[0]"}, tensor<3x3xf32> {jax.result_info = "result[1]"}, tensor<2x3x3xf32> {jax.result_info = "result[2]"}, tensor<4x2xf32> {jax.result_info = "result[3]"}, tensor<4x2xf32> {jax.result_info = "result[4]"}, tensor<4x2xf32> {jax.result_info = "result[5]"}, tensor<4x2xf32> {jax.result_info = "result[6]"}, tensor<2x4xf32> {jax.result_info = "result[7]"}, tensor<2x4xf32> {jax.result_info = "result[8]"}, tensor<2x4xf32> {jax.result_info = "result[9]"}, tensor<2x4xf32> {jax.result_info = "result[10]"}) {
    %0 = call @cholesky(%arg0) : (tensor<4x4xf32>) -> tensor<4x4xf32>
    %1 = call @cholesky_0(%arg1) : (tensor<3x3xf32>) -> tensor<3x3xf32>
    %2 = call @cholesky_1(%arg2) : (tensor<2x3x3xf32>) -> tensor<2x3x3xf32>
    %3 = "stablehlo.triangular_solve"(%arg3, %arg4) <{left_side = true, lower = true, transpose_a = #stablehlo<transpose NO_TRANSPOSE>, unit_diagonal = false}> : (tensor<4x4xf32>, tensor<4x2xf32>) -> tensor<4x2xf32>
    %4 = "stablehlo.triangular_solve"(%arg3, %arg4) <{left_side = true, lower = true, transpose_a = #stablehlo<transpose TRANSPOSE>, unit_diagonal = true}> : (tensor<4x4xf32>, tensor<4x2xf32>) -> tensor<4x2xf32>
    %5 = "stablehlo.triangular_solve"(%arg3, %arg4) <{left_side = true, lower = false, transpose_a = #stablehlo<transpose NO_TRANSPOSE>, unit_diagonal = true}> : (tensor<4x4xf32>, tensor<4x2xf32>) -> tensor<4x2xf32>
    %6 = "stablehlo.triangular_solve"(%arg3, %arg4) <{left_side = true, lower = false, transpose_a = #stablehlo<transpose TRANSPOSE>, unit_diagonal = false}> : (tensor<4x4xf32>, tensor<4x2xf32>) -> tensor<4x2xf32>
    %7 = "stablehlo.triangular_solve"(%arg3, %arg5) <{left_side = false, lower = true, transpose_a = #stablehlo<transpose NO_TRANSPOSE>, unit_diagonal = true}> : (tensor<4x4xf32>, tensor<2x4xf32>) -> tensor<2x4xf32>
    %8 = "stablehlo.triangular_solve"(%arg3, %arg5) <{left_side = false, lower = true, transpose_a = #stablehlo<transpose TRANSPOSE>, unit_diagonal = false}> : (tensor<4x4xf32>, tensor<2x4xf32>) -> tensor<2x4xf32>
    %9 = "stablehlo.triangular_solve"(%arg3, %arg5) <{left_side = false, lower = false, transpose_a = #stablehlo<transpose NO_TRANSPOSE>, unit_diagonal = false}> : (tensor<4x4xf32>, tensor<2x4xf32>) -> tensor<2x4xf32>
    %10 = "stablehlo.triangular_solve"(%arg3, %arg5) <{left_side = false, lower = false, transpose_a = #stablehlo<transpose TRANSPOSE>, unit_diagonal = true}> : (tensor<4x4xf32>, tensor<2x4xf32>) -> tensor<2x4xf32>
    return %0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10 : tensor<4x4xf32>, tensor<3x3xf32>, tensor<2x3x3xf32>, tensor<4x2xf32>, tensor<4x2xf32>, tensor<4x2xf32>, tensor<4x2xf32>, tensor<2x4xf32>, tensor<2x4xf32>, tensor<2x4xf32>, tensor<2x4xf32>
  }
  func.func private @cholesky(%arg0: tensor<4x4xf32>) -> tensor<4x4xf32> {
    %cst = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %c = stablehlo.constant dense<0> : tensor<i32>
    %cst_0 = stablehlo.constant dense<2.000000e+00> : tensor<f32>
    %0 = stablehlo.transpose %arg0, dims = [1, 0] : (tensor<4x4xf32>) -> tensor<4x4xf32>
    %1 = stablehlo.add %arg0, %0 : tensor<4x4xf32>
    %2 = stablehlo.broadcast_in_dim %cst_0, dims = [] : (tensor<f32>) -> tensor<4x4xf32>
    %3 = stablehlo.divide %1, %2 : tensor<4x4xf32>
    %4 = stablehlo.cholesky %3, lower = true : tensor<4x4xf32>
    %5 = stablehlo.iota dim = 0 : tensor<4x4xi32>
    %6 = stablehlo.broadcast_in_dim %c, dims = [] : (tensor<i32>) -> tensor<4x4xi32>
    %7 = stablehlo.add %5, %6 : tensor<4x4xi32>
    %8 = stablehlo.iota dim = 1 : tensor<4x4xi32>
    %9 = stablehlo.compare GE, %7, %8, SIGNED : (tensor<4x4xi32>, tensor<4x4xi32>) -> tensor<4x4xi1>
    %10 = stablehlo.broadcast_in_dim %cst, dims = [] : (tensor<f32>) -> tensor<4x4xf32>
    %11 = stablehlo.select %9, %4, %10 : tensor<4x4xi1>, tensor<4x4xf32>
    return %11 : tensor<4x4xf32>
  }
  func.func private @cholesky_0(%arg0: tensor<3x3xf32>) -> tensor<3x3xf32> {
    %cst = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %c = stablehlo.constant dense<0> : tensor<i32>
    %cst_0 = stablehlo.constant dense<2.000000e+00> : tensor<f32>
    %0 = stablehlo.transpose %arg0, dims = [1, 0] : (tensor<3x3xf32>) -> tensor<3x3xf32>
    %1 = stablehlo.add %arg0, %0 : tensor<3x3xf32>
    %2 = stablehlo.broadcast_in_dim %cst_0, dims = [] : (tensor<f32>) -> tensor<3x3xf32>
    %3 = stablehlo.divide %1, %2 : tensor<3x3xf32>
    %4 = stablehlo.cholesky %3, lower = true : tensor<3x3xf32>
    %5 = stablehlo.iota dim = 0 : tensor<3x3xi32>
    %6 = stablehlo.broadcast_in_dim %c, dims = [] : (tensor<i32>) -> tensor<3x3xi32>
    %7 = stablehlo.add %5, %6 : tensor<3x3xi32>
    %8 = stablehlo.iota dim = 1 : tensor<3x3xi32>
    %9 = stablehlo.compare GE, %7, %8, SIGNED : (tensor<3x3xi32>, tensor<3x3xi32>) -> tensor<3x3xi1>
    %10 = stablehlo.broadcast_in_dim %cst, dims = [] : (tensor<f32>) -> tensor<3x3xf32>
    %11 = stablehlo.select %9, %4, %10 : tensor<3x3xi1>, tensor<3x3xf32>
    return %11 : tensor<3x3xf32>
  }
  func.func private @cholesky_1(%arg0: tensor<2x3x3xf32>) -> tensor<2x3x3xf32> {
    %cst = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %c = stablehlo.constant dense<0> : tensor<i32>
    %cst_0 = stablehlo.constant dense<2.000000e+00> : tensor<f32>
    %0 = stablehlo.transpose %arg0, dims = [0, 2, 1] : (tensor<2x3x3xf32>) -> tensor<2x3x3xf32>
    %1 = stablehlo.add %arg0, %0 : tensor<2x3x3xf32>
    %2 = stablehlo.broadcast_in_dim %cst_0, dims = [] : (tensor<f32>) -> tensor<2x3x3xf32>
    %3 = stablehlo.divide %1, %2 : tensor<2x3x3xf32>
    %4 = stablehlo.cholesky %3, lower = true : tensor<2x3x3xf32>
    %5 = stablehlo.iota dim = 0 : tensor<3x3xi32>
    %6 = stablehlo.broadcast_in_dim %c, dims = [] : (tensor<i32>) -> tensor<3x3xi32>
    %7 = stablehlo.add %5, %6 : tensor<3x3xi32>
    %8 = stablehlo.iota dim = 1 : tensor<3x3xi32>
    %9 = stablehlo.compare GE, %7, %8, SIGNED : (tensor<3x3xi32>, tensor<3x3xi32>) -> tensor<3x3xi1>
    %10 = stablehlo.broadcast_in_dim %9, dims = [1, 2] : (tensor<3x3xi1>) -> tensor<2x3x3xi1>
    %11 = stablehlo.broadcast_in_dim %cst, dims = [] : (tensor<f32>) -> tensor<2x3x3xf32>
    %12 = stablehlo.select %10, %4, %11 : tensor<2x3x3xi1>, tensor<2x3x3xf32>
    return %12 : tensor<2x3x3xf32>
  }
}
