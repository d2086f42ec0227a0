module @jit_math_functions attributes {mhlo.num_partitions = 1 : i32, mhlo.num_replicas = 1 : i32} {
  func.func public @main(%arg0: tensor<3x4xf32>, %arg1: tensor<3x4xf32>) -> (tensor<3x4xf32> {jax.result_info = "result[0]"}, tensor<3x4xf32> {jax.result_info = "result[1]"}, tensor<3x4xf32> {jax.result_info = "result[2]"}, tensor<3x4xf32> {jax.result_info = "result[3]"}, tensor<3x4xf32> {jax.result_info = "result[4]"}, tensor<3x4xf32> {jax.result_info = "result[5]"}, tensor<3x4xf32> {jax.result_info = "result[6]"}, tensor<3x4xf32> {jax.result_info = "result[7]"}, tensor<3x4xf32> {jax.result_info = "result[8]"}, tensor<3x4xf32> {jax.result_info = "result[9]"}, tensor<3x4xf32> {jax.result_info = "result[10]"}, tensor<3x4xf32> {jax.result_info = "result[11]"}, tensor<3x4xf32> {jax.result_info = "result[12]"}, tensor<3x4xf32> {jax.result_info = "result[13]"}, tensor<3x4xf32> {jax.result_info = "result[14]"}, tensor<3x4xf32> {jax.result_info = "result[15]"}, tensor<3x4xf32> {jax.result_info = "result[16]"}, tensor<3x4xf32> {jax.result_info = "result[17]"}, tensor<3x4xf32> {jax.result_info = "result[18]"}, tensor<3x4xi1> {jax.result_info = "result[19]"}, tensor<3x4xf32> {jax.result_info = "result[20]"}, tensor<3x4xf32> {jax.result_info = "result[21]"}) {
    %cst = stablehlo.constant dense<3.000000e-01> : tensor<f32>
    %0 = stablehlo.broadcast_in_dim %cst, dims = [] : (tensor<f32>) -> tensor<3x4xf32>
    %1 = stablehlo.add %arg0, %0 : tensor<3x4xf32>
    %cst_0 = stablehlo.constant dense<1.000000e+00> : tensor<f32>
    %2 = stablehlo.broadcast_in_dim %cst_0, dims = [] : (tensor<f32>) -> tensor<3x4xf32>
    %3 = stablehlo.add %1, %2 : tensor<3x4xf32>
    %4 = chlo.digamma %3 : tensor<3x4xf32> -> tensor<3x4xf32>
    %5 = chlo.asinh %3 : tensor<3x4xf32> -> tensor<3x4xf32>
    %6 = chlo.square %3 : tensor<3x4xf32> -> tensor<3x4xf32>
    %cst_1 = stablehlo.constant dense<1.000000e+00> : tensor<f32>
    %7 = stablehlo.broadcast_in_dim %cst_1, dims = [] : (tensor<f32>) -> tensor<3x4xf32>
    %8 = stablehlo.add %6, %7 : tensor<3x4xf32>
    %9 = stablehlo.rsqrt %8 : tensor<3x4xf32>
    %10 = stablehlo.tan %3 : tensor<3x4xf32>
    %11 = chlo.square %10 : tensor<3x4xf32> -> tensor<3x4xf32>
    %cst_2 = stablehlo.constant dense<1.000000e+00> : tensor<f32>
    %12 = stablehlo.broadcast_in_dim %cst_2, dims = [] : (tensor<f32>) -> tensor<3x4xf32>
    %13 = stablehlo.add %12, %11 : tensor<3x4xf32>
    %cst_3 = stablehlo.constant dense<1.000000e+00> : tensor<f32>
    %14 = stablehlo.broadcast_in_dim %cst_3, dims = [] : (tensor<f32>) -> tensor<3x4xf32>
    %15 = stablehlo.multiply %5, %14 : tensor<3x4xf32>
    %16 = stablehlo.multiply %14, %10 : tensor<3x4xf32>
    %17 = stablehlo.multiply %15, %13 : tensor<3x4xf32>
    %18 = stablehlo.multiply %16, %9 : tensor<3x4xf32>
    %19 = stablehlo.add %17, %18 : tensor<3x4xf32>
    %20 = stablehlo.multiply %14, %4 : tensor<3x4xf32>
    %21 = stablehlo.add %19, %20 : tensor<3x4xf32>
    %22 = chlo.sinh %arg0 : tensor<3x4xf32> -> tensor<3x4xf32>
    %23 = chlo.cosh %arg0 : tensor<3x4xf32> -> tensor<3x4xf32>
    %24 = chlo.asin %arg1 : tensor<3x4xf32> -> tensor<3x4xf32>
    %25 = chlo.acos %arg1 : tensor<3x4xf32> -> tensor<3x4xf32>
    %26 = chlo.atan %arg0 : tensor<3x4xf32> -> tensor<3x4xf32>
    %27 = chlo.asinh %arg0 : tensor<3x4xf32> -> tensor<3x4xf32>
    %cst_4 = stablehlo.constant dense<1.000000e+00> : tensor<f32>
    %28 = stablehlo.broadcast_in_dim %cst_4, dims = [] : (tensor<f32>) -> tensor<3x4xf32>
    %29 = stablehlo.add %1, %28 : tensor<3x4xf32>
    %30 = call @arccosh(%29) : (tensor<3x4xf32>) -> tensor<3x4xf32>
    %31 = chlo.atanh %arg1 : tensor<3x4xf32> -> tensor<3x4xf32>
    %32 = chlo.erfc %arg0 : tensor<3x4xf32> -> tensor<3x4xf32>
    %33 = chlo.erf_inv %arg1 : tensor<3x4xf32> -> tensor<3x4xf32>
    %34 = chlo.lgamma %1 : tensor<3x4xf32> -> tensor<3x4xf32>
    %35 = chlo.digamma %1 : tensor<3x4xf32> -> tensor<3x4xf32>
    %36 = stablehlo.cbrt %arg0 : tensor<3x4xf32>
    %37 = stablehlo.exponential_minus_one %arg0 : tensor<3x4xf32>
    %38 = stablehlo.tan %arg1 : tensor<3x4xf32>
    %39 = stablehlo.atan2 %arg0, %arg1 : tensor<3x4xf32>
    %cst_5 = stablehlo.constant dense<3.000000e+00> : tensor<f32>
    %40 = stablehlo.broadcast_in_dim %cst_5, dims = [] : (tensor<f32>) -> tensor<3x4xf32>
    %41 = stablehlo.multiply %arg0, %40 : tensor<3x4xf32>
    %42 = call @round(%41) : (tensor<3x4xf32>) -> tensor<3x4xf32>
    %cst_6 = stablehlo.constant dense<3.000000e+00> : tensor<f32>
    %43 = stablehlo.broadcast_in_dim %cst_6, dims = [] : (tensor<f32>) -> tensor<3x4xf32>
    %44 = stablehlo.multiply %arg0, %43 : tensor<3x4xf32>
    %45 = stablehlo.round_nearest_afz %44 : tensor<3x4xf32>
    %cst_7 = stablehlo.constant dense<3.000000e+00> : tensor<f32>
    %46 = stablehlo.broadcast_in_dim %cst_7, dims = [] : (tensor<f32>) -> tensor<3x4xf32>
    %47 = stablehlo.multiply %arg0, %46 : tensor<3x4xf32>
    %48 = stablehlo.ceil %47 : tensor<3x4xf32>
    %49 = stablehlo.divide %arg0, %arg1 : tensor<3x4xf32>
    %50 = stablehlo.is_finite %49 : (tensor<3x4xf32>) -> tensor<3x4xi1>
    %cst_8 = stablehlo.constant dense<5.000000e-01> : tensor<f32>
    %51 = stablehlo.broadcast_in_dim %cst_8, dims = [] : (tensor<f32>) -> tensor<3x4xf32>
    %52 = stablehlo.multiply %51, %arg0 : tensor<3x4xf32>
    %53 = stablehlo.negate %arg0 : tensor<3x4xf32>
    %cst_9 = stablehlo.constant dense<0.707106769> : tensor<f32>
    %54 = stablehlo.broadcast_in_dim %cst_9, dims = [] : (tensor<f32>) -> tensor<3x4xf32>
    %55 = stablehlo.multiply %53, %54 : tensor<3x4xf32>
    %56 = chlo.erfc %55 : tensor<3x4xf32> -> tensor<3x4xf32>
    %57 = stablehlo.multiply %52, %56 : tensor<3x4xf32>
    return %22, %23, %24, %25, %26, %27, %30, %31, %32, %33, %34, %35, %36, %37, %38, %39, %42, %45, %48, %50, %57, %21 : tensor<3x4xf32>, tensor<3x4xf32>, tensor<3x4xf32>, tensor<3x4xf32>, tensor<3x4xf32>, tensor<3x4xf32>, tensor<3x4xf32>, tensor<3x4xf32>, tensor<3x4xf32>, tensor<3x4xf32>, tensor<3x4xf32>, tensor<3x4xf32>, tensor<3x4xf32>, tensor<3x4xf32>, tensor<3x4xf32>, tensor<3x4xf32>, tensor<3x4xf32>, tensor<3x4xf32>, tensor<3x4xf32>, tensor<3x4xi1>, tensor<3x4xf32>, tensor<3x4xf32>
  }
  func.func private @arccosh(%arg0: tensor<3x4xf32>) -> tensor<3x4xf32> {
    %0 = chlo.acosh %arg0 : tensor<3x4xf32> -> tensor<3x4xf32>
    return %0 : tensor<3x4xf32>
  }
  func.func private @round(%arg0: tensor<3x4xf32>) -> tensor<3x4xf32> {
    %0 = stablehlo.round_nearest_even %arg0 : tensor<3x4xf32>
    return %0 : tensor<3x4xf32>
  }
}
